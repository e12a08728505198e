import { ConflictError, NotFoundError } from '../../src/errors.js';

/** An organization. */
export interface OrgRecord {
  id: string;
  name: string;
  created_at: string;
}

/** A stored resource of one organization, addressed by id or by its optional unique name. */
export interface NamedRecord {
  id: string;
  org_id: string;
  name?: string;
}

/** The org's record whose id, else whose name, is idOrName: 404 for anything else (another org's too). */
export function findByIdOrName<T extends NamedRecord>(records: readonly T[], org: OrgRecord, idOrName: string, kind: string): T {
  const mine = records.filter((r) => r.org_id === org.id);
  const record = mine.find((r) => r.id === idOrName) ?? mine.find((r) => r.name === idOrName);
  if (!record) throw new NotFoundError(`${kind} ${JSON.stringify(idOrName)} not found`);
  return record;
}

/** 409 when one of the org's records already has this name (names are unique per organization). */
export function assertNameFree(records: readonly NamedRecord[], org: OrgRecord, name: string, kind: string): void {
  if (records.some((r) => r.org_id === org.id && r.name === name)) {
    throw new ConflictError(`${kind} named ${JSON.stringify(name)} already exists`);
  }
}
