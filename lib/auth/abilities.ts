// PAT abilities (docs/api.md section 3). `*` grants every ability inside the org but not
// `orgs:admin`, which creates other orgs and is held only by the bootstrap admin.
export const abilities = [
  'streams:create', 'streams:read', 'streams:update', 'streams:delete',
  'streams:issue-token', 'streams:revoke-token', 'data:read', 'tokens:manage', 'orgs:admin', '*',
] as const
export type Ability = typeof abilities[number]

export function isAbility (value: unknown): value is Ability {
  return typeof value === 'string' && (abilities as readonly string[]).includes(value)
}

export function hasAbility (held: readonly string[], needed: Ability): boolean {
  if (held.includes(needed)) return true
  return needed !== 'orgs:admin' && held.includes('*')
}

/** Whether every requested ability is covered by the held set (a PAT cannot mint more than it has). */
export function coversAbilities (held: readonly string[], requested: readonly string[]): boolean {
  return requested.every((a) => isAbility(a) && hasAbility(held, a))
}
