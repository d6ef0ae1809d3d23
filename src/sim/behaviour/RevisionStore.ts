import type { KubeObject } from '../types.js';
import type { BehaviourContext } from './context.js';
import { keyOf, ownerRefTo } from './kube.js';

/**
 * ControllerRevisions of DaemonSets and StatefulSets: one per template, named `<owner>-<hash>`, holding the template so
 * a StatefulSet can recreate a pod below its partition at the old revision. Templates are also kept in memory, so
 * the simulator works even where the store serves no ControllerRevisions.
 */
export class RevisionStore {
  private readonly templates = new Map<string, unknown>();

  constructor(private readonly ctx: BehaviourContext) {
    for (const cr of ctx.index.all('controllerrevisions')) {
      const template = (cr.data as any)?.spec?.template;
      if (template) this.templates.set(keyOf(cr), template);
    }
  }

  /** Ensures the revision `<owner>-<hash>` exists and is the owner's newest; returns its name. */
  ensure(owner: KubeObject, hash: string, extraLabels: Record<string, string>): string {
    const name = `${owner.metadata.name}-${hash}`;
    const key = `${owner.metadata.namespace}/${name}`;
    const template = owner.spec?.template;
    this.templates.set(key, template);
    const type = this.ctx.types.controllerrevisions;
    if (!type) return name;
    const owned = this.ctx.index.ownedBy(owner.metadata.uid, 'controllerrevisions');
    const newest = owned.reduce((max, cr) => Math.max(max, Number(cr.revision ?? 0)), 0);
    const existing = this.ctx.index.get('controllerrevisions', key);
    if (existing) {
      if (Number(existing.revision ?? 0) < newest) this.ctx.store.update(type, { ...existing, revision: newest + 1 });
      return name;
    }
    const cr: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: {
        name,
        namespace: owner.metadata.namespace,
        labels: { ...(owner.spec?.template?.metadata?.labels ?? {}), ...extraLabels },
        ownerReferences: [ownerRefTo(owner)],
      },
      data: { spec: { template } },
      revision: newest + 1,
    };
    try {
      this.ctx.store.create(type, cr);
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
    }
    return name;
  }

  template(namespace: string | undefined, revisionName: string): unknown {
    return this.templates.get(`${namespace}/${revisionName}`);
  }
}
