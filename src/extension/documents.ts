// Read-only documents: a receipt as pretty JSON (`turnkeeper:/receipt/<seq>.jsonc`) and recovery
// guidance as Markdown (`turnkeeper:/guidance/<capture>.md`). Content providers give read-only
// editors for free, which is what a receipt must be. A receipt document starts with `//` lines (its
// seq and hash, a chain break, the stored text the hash covers), so it is JSON with Comments: as
// `json` the editor listed each comment in the Problems view.
import * as vscode from 'vscode';
import type { Ctx } from './ctx';

export const SCHEME = 'turnkeeper';

export const receiptUri = (seq: number): vscode.Uri => vscode.Uri.from({ scheme: SCHEME, path: `/receipt/${seq}.jsonc` });
/** The language of a receipt document (commands.ts sets it too, over any files.associations). */
export const RECEIPT_LANGUAGE = 'jsonc';
/**
 * The guidance texts this window produced, by the number in their URI's query. The text is never read
 * from the URI itself: any link to `turnkeeper:/guidance/…` (in a repository's README, say) could then
 * show a "Recover:" command of its choosing in what looks like Turnkeeper's own read-only guidance.
 */
const guidanceTexts = new Map<string, string>();

export const guidanceUri = (captureId: string, text: string): vscode.Uri => {
  // A new URI per text: the editor keeps a document's first content for as long as it is open.
  const key = String(guidanceTexts.size + 1);
  guidanceTexts.set(key, text);
  return vscode.Uri.from({ scheme: SCHEME, path: `/guidance/${captureId}.md`, query: key });
};

/** The doctor reports this window rendered (`turnkeeper:/doctor.md?<n>`), kept as the guidance texts are. */
const doctorTexts = new Map<string, string>();

export const doctorUri = (markdown: string): vscode.Uri => {
  const key = String(doctorTexts.size + 1);
  doctorTexts.set(key, markdown);
  return vscode.Uri.from({ scheme: SCHEME, path: '/doctor.md', query: key });
};

export class TurnkeeperDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly ctx: Ctx) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    // `.json`: the URI of earlier versions, which the editor may restore in a tab.
    const receipt = /^\/receipt\/(\d+)\.jsonc?$/.exec(uri.path);
    if (receipt) {
      const seq = Number(receipt[1]);
      const store = await this.ctx.openStore();
      const [row] = store ? await store.receipts({ beforeSeq: seq + 1, limit: 1 }) : [];
      if (!row || row.seq !== seq) return `// receipt #${seq} does not exist\n`;
      let pretty: string;
      try {
        pretty = JSON.stringify(JSON.parse(row.doc), null, 2);
      } catch {
        pretty = JSON.stringify({ unreadable: row.doc }, null, 2);
      }
      const broken = this.ctx.chainReport?.breaks.find((item) => item.seq === seq);
      return `// receipt #${seq}, hash ${row.hash ?? 'MISSING'}${broken ? ` — chain break: ${broken.kind}` : ''}\n// stored text (what the hash covers): ${row.doc}\n${pretty}\n`;
    }
    if (uri.path === '/doctor.md') return doctorTexts.get(uri.query) ?? '';
    const guidance = /^\/guidance\/(cap_[0-9a-f]{24})\.md$/.exec(uri.path);
    const text = guidanceTexts.get(uri.query);
    if (guidance && text !== undefined) {
      const [headline, ...rest] = text.split('\n');
      return [
        `# Recovery guidance for ${guidance[1]}`,
        '',
        headline ?? '',
        '',
        '```sh',
        ...rest.filter((line) => line.startsWith('Recover: ')).map((line) => line.slice('Recover: '.length)),
        '```',
        '',
        ...rest.filter((line) => !line.startsWith('Recover: ')),
      ].join('\n');
    }
    return '';
  }
}
