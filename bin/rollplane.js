#!/usr/bin/env node
// The installed `rollplane` command: runs the built CLI (npm install builds it).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
