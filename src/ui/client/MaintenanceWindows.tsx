import { useState } from 'react';
import { describeError, gql } from './api.js';
import { QueryStatus, ScrollRegion, Section, StateBadge } from './components.js';
import { formatTime } from './format.js';
import { type ClustersPageQuery, CreateMaintenanceWindowDocument, DeleteMaintenanceWindowDocument, MaintenanceWindowsDocument } from './generated/graphql.js';
import { useAction, useLive, useQuery } from './hooks.js';
import { definitionOf, type WindowFormFields, windowInputOf, windowLines } from './windowPolicyText.js';

type WindowState = ClustersPageQuery['clusters'][number]['maintenanceWindow'];

/**
 * The maintenance-window policies (docs/waves.md): each one's kind, clock, clusters and windows. An admin may create
 * and delete them here (the API refuses the others); `onChange` lets the clusters' window column follow.
 */
export function MaintenanceWindows({ onChange }: { onChange: () => void }) {
  const isAdmin = useLive().server?.caller.role === 'admin';
  const query = useQuery(MaintenanceWindowsDocument, {}, { pollMs: 30_000 });
  const policies = query.data?.maintenanceWindows;
  const changed = () => {
    query.reload();
    onChange();
  };
  return (
    <Section id="maintenance-windows" title={`Maintenance windows${policies ? ` · ${policies.length}` : ''}`}>
      <QueryStatus error={query.error} loading={query.loading} hasData={!!policies} what="maintenance windows">
        <ScrollRegion label="Maintenance-window policies">
          <table className="data" aria-label="Maintenance-window policies">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Time zone</th>
                <th scope="col">Clusters</th>
                <th scope="col">Windows</th>
                <th scope="col">Updated</th>
                {isAdmin && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {policies?.map((p) => {
                const d = definitionOf(p.definition);
                return (
                  <tr key={p.name} data-window={p.name}>
                    <td>{p.name}</td>
                    <td>{p.kind}</td>
                    <td>{d.timeZone ?? 'UTC'}</td>
                    <td>{d.clusterSelector ? <code>{d.clusterSelector}</code> : <span className="muted">every cluster</span>}</td>
                    <td>
                      <ul className="window-lines">
                        {windowLines(d).map((line) => (
                          <li key={line}>
                            <code>{line}</code>
                          </li>
                        ))}
                      </ul>
                    </td>
                    <td>{formatTime(p.updatedAt)}</td>
                    {isAdmin && (
                      <td>
                        <DeleteWindowButton name={p.name} onDeleted={changed} />
                      </td>
                    )}
                  </tr>
                );
              })}
              {policies && policies.length === 0 && (
                <tr>
                  <td colSpan={isAdmin ? 7 : 6} className="muted">
                    No policy: every cluster is open to changes.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </ScrollRegion>
      </QueryStatus>
      {isAdmin && <CreateWindowForm onCreated={changed} />}
    </Section>
  );
}

/** A cluster's window now: open or closed, the policy that decided, and when that changes next. */
export function WindowCell({ state }: { state: WindowState }) {
  return (
    <>
      <StateBadge state={state.open ? 'OPEN' : 'CLOSED'} /> <span className="small">{state.reason}</span>
      <span className="muted small"> · {state.until ? `next change ${formatTime(state.until)}` : 'no change within 400 days'}</span>
    </>
  );
}

function DeleteWindowButton({ name, onDeleted }: { name: string; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const action = useAction();
  async function click() {
    if (!confirming) {
      setConfirming(true);
      return;
    }
    setConfirming(false);
    if (await action.run(async () => void (await gql(DeleteMaintenanceWindowDocument, { name })))) onDeleted();
  }
  return (
    <>
      <button
        type="button"
        className={`action action-abort${confirming ? ' confirming' : ''}`}
        disabled={action.busy}
        onClick={() => void click()}
        onBlur={() => setConfirming(false)}
        aria-label={confirming ? `Confirm deleting window ${name}` : `Delete window ${name}`}
      >
        {confirming ? 'Confirm delete?' : 'Delete'}
      </button>
      {action.error && (
        <span className="error small" role="alert">
          {action.error}
        </span>
      )}
    </>
  );
}

/**
 * A new policy: one window a line, as `rollplane window` takes them in YAML. The server checks every rule and answers
 * a bad one with its field path (`input.weekly[0].days[0]`), shown as it is.
 */
function CreateWindowForm({ onCreated }: { onCreated: () => void }) {
  const [fields, setFields] = useState<WindowFormFields>({ name: '', kind: 'DENY', timeZone: '', clusterSelector: '', weekly: '', cron: '', ranges: '' });
  const [created, setCreated] = useState<string | null>(null);
  const action = useAction();
  const set = (key: keyof WindowFormFields) => (e: { target: { value: string } }) => setFields((f) => ({ ...f, [key]: e.target.value }));

  async function submit() {
    setCreated(null);
    let input: ReturnType<typeof windowInputOf>;
    try {
      input = windowInputOf(fields);
    } catch (e) {
      action.fail(describeError(e));
      return;
    }
    const done = await action.run(async () => {
      setCreated((await gql(CreateMaintenanceWindowDocument, { input })).createMaintenanceWindow.name);
    }, 'Not created: ');
    if (!done) return;
    setFields((f) => ({ ...f, name: '', weekly: '', cron: '', ranges: '' }));
    onCreated();
  }

  return (
    <form
      className="window-form"
      aria-label="Create a maintenance window"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <label>
        Name
        <input type="text" required value={fields.name} onChange={set('name')} placeholder="weekend-freeze" />
      </label>
      <label>
        Kind
        <select value={fields.kind} onChange={set('kind')}>
          <option value="DENY">DENY (no change inside)</option>
          <option value="ALLOW">ALLOW (changes only inside)</option>
        </select>
      </label>
      <label>
        Time zone
        <input type="text" value={fields.timeZone} onChange={set('timeZone')} placeholder="UTC" />
      </label>
      <label>
        Cluster selector
        <input type="text" value={fields.clusterSelector} onChange={set('clusterSelector')} placeholder="every cluster" />
      </label>
      <label>
        Weekly, one a line: DAYS START END
        <textarea rows={2} value={fields.weekly} onChange={set('weekly')} placeholder="SAT,SUN 00:00 24:00" />
      </label>
      <label>
        Cron, one a line: SCHEDULE DURATION
        <textarea rows={2} value={fields.cron} onChange={set('cron')} placeholder="0 22 * * 1-5 4h" />
      </label>
      <label>
        Ranges, one a line: FROM TO
        <textarea rows={2} value={fields.ranges} onChange={set('ranges')} placeholder="2026-12-24T00:00 2026-12-27T00:00" />
      </label>
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Creating…' : 'Create window'}
      </button>
      {action.error && (
        <span className="error small" role="alert">
          {action.error}
        </span>
      )}
      {created && (
        <span className="small" role="status">
          Created {created}.
        </span>
      )}
    </form>
  );
}
