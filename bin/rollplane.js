#!/usr/bin/env node
// The installed `rollplane` command: runs the built CLI (npm install builds it).
import { ignoreClosedStdout, main } from '../dist/src/rollplane.js';

ignoreClosedStdout();
process.exitCode = await main(process.argv.slice(2));
