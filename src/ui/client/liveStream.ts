import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { type ComponentType, createElement, type ReactNode } from 'react';
import type { LiveConnection } from './live.js';

/** One row of the live feed, ordered by event id; `cells` are its stream's columns after the id and the time. */
export interface FeedRow {
  id: number;
  at: string;
  /** Its stream's key: the feed's filter value and the row's `data-feed-kind`. */
  stream: string;
  /** What the feed's search box looks through (its string values). */
  item: object;
  cells: ReactNode;
}

/** Where a stream delivers what arrives. */
export interface LiveSink<T> {
  item(row: FeedRow, item: T): void;
  error(message: string): void;
}

/** A kind's live subscription (made by liveStream()), which the live store starts and resumes. */
export interface LiveStream<T = unknown> {
  /** The feed's filter value and each row's `data-feed-kind`. */
  key: string;
  /** What the feed calls its rows, plural: `agent recreations`. */
  label: string;
  /** Whether the store keeps its items for charts (useLiveSeries), beyond the feed's window. */
  series: boolean;
  /** Subscribes from `after` (resuming after reconnects) until the returned function is called. */
  start(connection: LiveConnection, after: string, sink: LiveSink<T>): () => void;
}

export interface LiveStreamOptions<TData, T extends object> {
  key: string;
  label: string;
  /** How an error of the subscription is prefixed in the page's error banner. */
  what: string;
  /** A typed subscription document whose only variable is `after`. */
  query: DocumentTypeDecoration<TData, { after?: string | null }>;
  /** The item out of a result (the subscription's root field), in the shape the feed and the charts use. */
  select: (data: TData) => T;
  /** The item's event id: the resume cursor and the feed's order. */
  idOf: (item: T) => number;
  /** When it happened, for the feed's Time column. */
  atOf: (item: T) => string;
  /** Its feed columns: What, Target, Detail, Duration (four cells). */
  Cells: ComponentType<{ item: T }>;
  series?: boolean;
}

export function liveStream<TData, T extends object>(options: LiveStreamOptions<TData, T>): LiveStream<T> {
  const { key, label, what, query, select, idOf, atOf, Cells } = options;
  return {
    key,
    label,
    series: options.series ?? false,
    start: (connection, after, sink) =>
      connection.subscribe({
        query,
        after,
        select,
        idOf,
        onItem: (item) => sink.item({ id: idOf(item), at: atOf(item), stream: key, item, cells: createElement(Cells, { item }) }, item),
        onError: (message) => sink.error(`${what}: ${message}`),
      }),
  };
}
