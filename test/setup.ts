// Runs before every test file: the simulator deep-freezes what it stores, so a test (or simulated controller) that
// mutates a shared object fails at once instead of corrupting the simulated cluster. Production and the benchmarks
// run without freezing (see MemoryStore's `freeze` option).
import { MemoryStore } from '../src/sim/store/MemoryStore.js';

MemoryStore.freezeByDefault = true;
