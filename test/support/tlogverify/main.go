// An independent verifier of Turnkeeper's transparency log (test/integration/tlog-verify.test.ts): Go's
// golang.org/x/mod/sumdb/tlog and sumdb/note, which Turnkeeper's code never calls. It reads one JSON
// object on stdin (the stored documents, a verifier key, and cases: roots, inclusion proofs, consistency
// proofs, signed notes), computes the tree itself from the documents (tlog.StoredHashes) and prints one
// line per case: "ok" or the error Go's check gave. Built offline in GOPATH mode against Debian's
// golang-golang-x-mod-dev (GO111MODULE=off GOPATH=/usr/share/gocode:…).
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type testCase struct {
	Kind     string   `json:"kind"`
	Size     int64    `json:"size"`
	Index    int64    `json:"index"`
	From     int64    `json:"from"`
	To       int64    `json:"to"`
	Root     string   `json:"root"`
	FromRoot string   `json:"fromRoot"`
	Proof    []string `json:"proof"`
	Note     string   `json:"note"`
	Document *string  `json:"document"`
}

type input struct {
	Key       string     `json:"key"`
	Documents []string   `json:"documents"`
	Cases     []testCase `json:"cases"`
}

func hashOf(text string) (tlog.Hash, error) {
	var h tlog.Hash
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("not a base64 hash: %q", text)
	}
	copy(h[:], b)
	return h, nil
}

func hashesOf(texts []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(texts))
	for i, t := range texts {
		h, err := hashOf(t)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The tree from the documents alone, in Go's stored-hash layout.
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x < 0 || x >= int64(len(stored)) {
				return nil, fmt.Errorf("no stored hash %d", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, doc := range in.Documents {
		hashes, err := tlog.StoredHashes(int64(i), []byte(doc), reader)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		stored = append(stored, hashes...)
	}
	verifier, err := note.NewVerifier(in.Key)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, c := range in.Cases {
		if err := check(c, reader, verifier); err != nil {
			fmt.Println(strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Println("ok")
		}
	}
}

func check(c testCase, reader tlog.HashReader, verifier note.Verifier) error {
	switch c.Kind {
	case "root":
		root, err := hashOf(c.Root)
		if err != nil {
			return err
		}
		want, err := tlog.TreeHash(c.Size, reader)
		if err != nil {
			return err
		}
		if want != root {
			return fmt.Errorf("tlog.TreeHash(%d) = %s, not %s", c.Size, want, root)
		}
		return nil
	case "inclusion":
		root, err := hashOf(c.Root)
		if err != nil {
			return err
		}
		proof, err := hashesOf(c.Proof)
		if err != nil {
			return err
		}
		if c.Document == nil {
			return errors.New("no document")
		}
		return tlog.CheckRecord(tlog.RecordProof(proof), c.Size, root, c.Index, tlog.RecordHash([]byte(*c.Document)))
	case "consistency":
		from, err := hashOf(c.FromRoot)
		if err != nil {
			return err
		}
		to, err := hashOf(c.Root)
		if err != nil {
			return err
		}
		proof, err := hashesOf(c.Proof)
		if err != nil {
			return err
		}
		return tlog.CheckTree(tlog.TreeProof(proof), c.To, to, c.From, from)
	case "note":
		n, err := note.Open([]byte(c.Note), note.VerifierList(verifier))
		if err != nil {
			return err
		}
		// The body as c2sp.org/tlog-checkpoint reads it: origin, tree size, root hash, extensions.
		lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
		if len(lines) < 3 {
			return errors.New("not a checkpoint")
		}
		size, err := strconv.ParseInt(lines[1], 10, 64)
		if err != nil {
			return err
		}
		root, err := hashOf(lines[2])
		if err != nil {
			return err
		}
		want, err := tlog.TreeHash(size, reader)
		if err != nil {
			return err
		}
		if want != root {
			return fmt.Errorf("the note's root is not tlog.TreeHash(%d) = %s", size, want)
		}
		return nil
	}
	return fmt.Errorf("unknown case %q", c.Kind)
}
