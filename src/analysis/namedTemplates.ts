import type { GateType } from '../domain/gates/registry.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { isDns1123Subdomain, isValidName } from '../util/dnsNames.js';
import type { AnalysisTemplateStore, NamedTemplate } from './model.js';
import { parseAnalysisTemplate } from './template.js';

/**
 * Analysis templates by name (issue 33, ADR 0071): stored once, referred to by `templateName` in an ANALYSIS gate's
 * config or a rollout's `strategy.analysis.config`. A template is checked when it is stored exactly as an inline one
 * is at submit (the ANALYSIS gate type's own check: the Argo Rollouts subset, arguments, conditions, PromQL, a
 * Prometheus to ask), and its text is copied into the gate's config when a rollout is launched (`resolve`), so
 * changing or deleting it later changes no rollout already launched.
 */
/** Templates stored at most (what `analysisTemplates` lists, and so what the query costs). */
export const MAX_ANALYSIS_TEMPLATES = 500;

export class AnalysisTemplates {
  constructor(
    private readonly store: AnalysisTemplateStore,
    /** The ANALYSIS gate type: what an inline template is checked with. */
    private readonly analysis: Pick<GateType, 'check'>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(): Promise<NamedTemplate[]> {
    return this.store.templates();
  }

  get(name: string): Promise<NamedTemplate | undefined> {
    return this.store.templateNamed(name);
  }

  /** CONFLICT when the name is taken; BAD_USER_INPUT (`input.template.…`) or UNAVAILABLE as an inline template. */
  async create(input: { name: string; template: unknown }): Promise<NamedTemplate> {
    const name = checkName(input.name);
    const template = this.checked(input.template);
    // Checked before the insert, not under a lock: two creates at once may pass 500 by one, which bounds nothing less.
    if ((await this.store.templates()).length >= MAX_ANALYSIS_TEMPLATES) {
      throw new ValidationError('input', `at most ${MAX_ANALYSIS_TEMPLATES} analysis templates are stored; delete one first`);
    }
    const now = this.now();
    const written = await this.store.insertTemplate({ name, template, createdAt: now, updatedAt: now });
    if (!written) throw new ConflictError(`an analysis template named ${name} exists (update it, or choose another name)`);
    return (await this.store.templateNamed(name))!;
  }

  /** NOT_FOUND when there is none of that name. Rollouts already launched keep the text they copied. */
  async update(input: { name: string; template: unknown }): Promise<NamedTemplate> {
    const name = checkName(input.name);
    const template = this.checked(input.template);
    if (!(await this.store.updateTemplate(name, template, this.now()))) throw notFound(name);
    return (await this.store.templateNamed(name))!;
  }

  /** NOT_FOUND when there is none; returns the template deleted. */
  async delete(name: string): Promise<NamedTemplate> {
    const found = await this.store.templateNamed(name);
    if (!found || !(await this.store.deleteTemplate(name))) throw notFound(name);
    return found;
  }

  /**
   * An ANALYSIS config with `templateName` → the same config with the named template's text as `template` (and the
   * name kept, to say where it came from). BAD_USER_INPUT at `<field>.templateName` when there is no such template,
   * or when the config also gives a template.
   */
  async resolve(config: unknown, field: string): Promise<unknown> {
    if (!config || typeof config !== 'object' || Array.isArray(config)) return config;
    const { templateName, ...rest } = config as Record<string, unknown>;
    if (templateName === undefined) return config;
    if (typeof templateName !== 'string') throw new ValidationError(`${field}.templateName`, 'must be the name of a stored analysis template');
    if (rest.template !== undefined) throw new ValidationError(`${field}.templateName`, 'give either template (inline) or templateName, not both');
    const found = await this.store.templateNamed(templateName);
    if (!found) throw new ValidationError(`${field}.templateName`, `no analysis template is named ${JSON.stringify(templateName.slice(0, 253))}`);
    return { ...rest, template: found.template, templateName };
  }

  private checked(template: unknown): string {
    this.analysis.check({ template }, 'input');
    return parseAnalysisTemplate(template).source;
  }
}

function checkName(name: string): string {
  if (!isValidName(isDns1123Subdomain, name)) throw new ValidationError('input.name', 'must be a DNS-1123 subdomain (lowercase letters, digits, - and .)');
  return name;
}

function notFound(name: string): NotFoundError {
  return new NotFoundError(`no analysis template is named ${JSON.stringify(name.slice(0, 253))}`, { details: { name } });
}
