/** The history's persistence port is the domain's (domain/historyPort.ts); the store's modules reach it here. */
export type * from '../domain/historyPort.js';
