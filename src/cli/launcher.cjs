#!/usr/bin/env node
// Entry of the `turnkeeper` command. It only turns on Node's on-disk compile cache before loading the
// bundle: the cache must be enabled before a module is compiled to help it, and compiling the bundle
// is most of a hook's start-up time.
'use strict';
require('node:module').enableCompileCache?.();
require('./turnkeeper.js').runCli();
