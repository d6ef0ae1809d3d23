import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/** axe-core's browser bundle, injected into the page under test (no network: the page is restricted). */
const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface Findings {
  violations: string[];
  h1: number;
  overflow: string[];
}

/**
 * Runs in the page (a string: this project type-checks without the DOM library): the <h1> count, and whatever is
 * wider than the window or than its own box. A page wider than the window names what sticks out, outside the scroll
 * regions (whose content may be wider than they are).
 */
const LAYOUT_PROBE = `(() => {
  const overflow = [];
  const width = window.innerWidth;
  if (document.documentElement.scrollWidth > width) {
    const culprits = Array.from(document.querySelectorAll('body *'))
      .filter((e) => e.getBoundingClientRect().right > width && !e.parentElement?.closest('.table-scroll'))
      .map((e) => e.tagName.toLowerCase() + '.' + e.className + ' (' + Math.round(e.getBoundingClientRect().right) + ' px)');
    overflow.push('the page scrolls sideways (' + document.documentElement.scrollWidth + ' px): ' + culprits.slice(0, 3).join(', '));
  }
  for (const element of Array.from(document.querySelectorAll('.topbar, .panel, .rollout-card'))) {
    const box = element.getBoundingClientRect();
    const name = element.tagName.toLowerCase() + '.' + element.className.split(' ').join('.');
    if (box.right > width + 1) overflow.push(name + ' ends at ' + Math.round(box.right) + ' px');
    if (element.scrollWidth > element.clientWidth + 1) overflow.push(name + ' holds ' + element.scrollWidth + ' px in ' + element.clientWidth + ' px');
  }
  return { overflow, h1: document.querySelectorAll('h1').length };
})()`;

/** axe-core's serious and critical violations, the <h1> count, and whatever is wider than the window or its panel. */
export async function inspect(page: Page): Promise<Findings> {
  await page.evaluate(AXE);
  const axe = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  const violations = axe.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  const layout = (await page.evaluate(LAYOUT_PROBE)) as { overflow: string[]; h1: number };
  return { violations, ...layout };
}
