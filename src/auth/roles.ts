/** Roles, each including the one before it: viewer < deployer < admin. */
export type Role = 'viewer' | 'deployer' | 'admin';
export const ROLES: readonly Role[] = ['viewer', 'deployer', 'admin'];

export function roleAllows(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

/** Who is calling. `anonymous` only exists when authentication is off (loopback). */
export type Principal =
  | { kind: 'token'; tokenId: string; name: string; role: Role /** When the token stops working; null for never. */; expiresAt: Date | null }
  | { kind: 'anonymous'; role: 'admin' };

export const ANONYMOUS: Principal = { kind: 'anonymous', role: 'admin' };

export function principalName(principal: Principal): string {
  return principal.kind === 'token' ? principal.name : 'anonymous';
}
