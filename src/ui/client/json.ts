/** A JSON field as an object (`{}` when it is not one): what typed readers of a payload, a gate's config or a window's definition start from. */
export function recordOf(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
