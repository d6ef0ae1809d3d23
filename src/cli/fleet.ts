/**
 * `rollplane fleet`'s query and summary, built from the kinds' parts (ADR 0051): each registered kind contributes its
 * fragment on Query (src/kinds/<kind>/cli.graphql) and its row of the summary, in the order of the CLI's list of kinds
 * (src/kinds/cli.ts), which is the order of the table's rows and of the answer's fields.
 */
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { table, UNKNOWN_VERSION } from './format.js';
import { FleetDocument, type FleetQuery, type FleetQueryVariables, TypedDocumentString } from './generated/graphql.js';

/** A kind's part of the fleet summary: what it asks and how it shows it. */
export interface FleetPart<T> {
  /** Its fragment on Query (generated from its cli.graphql): spread into the Fleet query. */
  readonly fragment: DocumentTypeDecoration<T, unknown> & { toString(): string };
  /** Its row of the KIND table: the kind as people say it, its targets, how many drifted, a note. */
  row(answer: T): readonly [kind: string, targets: string, drifted: string, note: string];
  /** A table of its own after the drift line (node agents: their sets), or undefined for none. */
  details?(answer: T): string | undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: a list of parts, each of its own fragment's type
export type AnyFleetPart = FleetPart<any>;

const FRAGMENT_NAME = /^\s*fragment\s+(\w+)\s+on\s+Query\b/;

/**
 * The Fleet query (src/cli/operations.graphql: the drift count and the active rollouts) with each part's fragment
 * spread in first, in the parts' order, and their definitions appended.
 */
export function fleetQuery(parts: readonly AnyFleetPart[]): TypedDocumentString<FleetQuery, FleetQueryVariables> {
  const base = FleetDocument.toString();
  const open = base.indexOf('{') + 1;
  const spreads = parts.map((part) => {
    const name = FRAGMENT_NAME.exec(part.fragment.toString())?.[1];
    if (!name) throw new Error(`a fleet part's fragment must be a fragment on Query: ${part.fragment.toString().slice(0, 80)}`);
    return `\n  ...${name}`;
  });
  const fragments = parts.map((part) => part.fragment.toString()).join('');
  return new TypedDocumentString(`${base.slice(0, open)}${spreads.join('')}${base.slice(open)}${fragments}`);
}

/** The summary: one row per kind, the drift count, the kinds' own tables, the active rollouts. */
export function formatFleet(fleet: FleetQuery, parts: readonly AnyFleetPart[]): string {
  const kinds = table(
    ['KIND', 'TARGETS', 'DRIFTED', 'NOTE'],
    parts.map((part) => part.row(fleet)),
  );
  const details = parts.flatMap((part) => {
    const text = part.details?.(fleet);
    return text === undefined ? [] : ['', text];
  });
  const active = fleet.active.edges.map(({ node: r }) => [
    r.id,
    r.kind,
    r.state,
    `${r.progress.percent.toFixed(0)}%`,
    `${r.fromVersion ?? UNKNOWN_VERSION} → ${r.toVersion}`,
  ]);
  return [
    kinds,
    `drift: ${fleet.drift.totalCount} target${fleet.drift.totalCount === 1 ? '' : 's'} (rollplane drift lists them)`,
    ...details,
    '',
    active.length ? table(['ACTIVE ROLLOUT', 'KIND', 'STATE', 'DONE', 'VERSION'], active) : 'no active rollouts',
  ].join('\n');
}
