/**
 * Undoing one change to the live state document when its write fails (a full disk): the answer is
 * an error, so nothing of the change may stay in memory, where the next successful write would
 * persist it after all. The document's changes are in place (modules hold their records), of two
 * kinds: a record's own fields set or deleted, and a collection's members added or removed (or the
 * collection replaced by a filtered copy). A shallow picture of both taken before the change,
 * compared with the document after it, says exactly what the change did, so only that is
 * reverted, and a later change to other fields or records is left alone. A change deep inside a
 * record (a field of a field) is not seen: the daemon's changes replace a record's fields whole.
 */

type Doc = Record<string, unknown>;
type Rec = Record<string, unknown>;

interface Picture {
  /** Each collection's members, in order. */
  collections: Map<string, unknown[]>;
  fields: Map<Rec, Rec>;
}

const isRecord = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The document's collections and each record's own fields, as they are now. */
export function picture(doc: Doc): Picture {
  const collections: Picture['collections'] = new Map();
  const fields: Picture['fields'] = new Map();
  for (const [name, value] of Object.entries(doc)) {
    if (!Array.isArray(value)) continue;
    collections.set(name, value.slice());
    for (const member of value) if (isRecord(member)) fields.set(member, { ...member });
  }
  return { collections, fields };
}

const ABSENT = Symbol('absent');
type Value = unknown | typeof ABSENT;

/** What a change did: field edits (record, field, value before, value after) and membership edits. */
export interface Change {
  edits: { record: Rec; field: string; before: Value; after: Value }[];
  members: { name: string; added: unknown[]; removed: { member: unknown; index: number }[] }[];
}

export function changeBetween(before: Picture, doc: Doc): Change {
  // Walks the document as it is now against the picture, allocating only for what differs: this
  // runs twice for every change of the live state.
  const edits: Change['edits'] = [];
  for (const [record, was] of before.fields) {
    for (const field in was) {
      const after = field in record ? record[field] : ABSENT;
      if (after !== was[field]) edits.push({ record, field, before: was[field], after });
    }
    for (const field in record) if (!(field in was)) edits.push({ record, field, before: ABSENT, after: record[field] });
  }
  const members: Change['members'] = [];
  const names = new Set(before.collections.keys());
  for (const [name, value] of Object.entries(doc)) if (Array.isArray(value)) names.add(name);
  for (const name of names) {
    const was = before.collections.get(name) ?? [];
    const now = Array.isArray(doc[name]) ? (doc[name] as unknown[]) : [];
    if (now.length === was.length && now.every((m, i) => m === was[i])) continue;
    const wasSet = new Set(was);
    const nowSet = new Set(now);
    const added = now.filter((m) => !wasSet.has(m));
    const removed = was.flatMap((member, index) => (nowSet.has(member) ? [] : [{ member, index }]));
    if (added.length || removed.length) members.push({ name, added, removed });
  }
  return { edits, members };
}

/**
 * Reverts `change` in `doc`. A field is put back only if it still holds what the change wrote (a
 * later change to it wins); reverting several changes goes newest first.
 */
export function revert(doc: Doc, change: Change): void {
  for (const { record, field, before, after } of change.edits) {
    const current = field in record ? record[field] : ABSENT;
    if (current !== after) continue;
    if (before === ABSENT) delete record[field];
    else record[field] = before;
  }
  for (const { name, added, removed } of change.members) {
    const current = Array.isArray(doc[name]) ? (doc[name] as unknown[]) : (doc[name] = []);
    const drop = new Set(added);
    const kept = current.filter((m) => !drop.has(m));
    for (const { member, index } of removed) if (!kept.includes(member)) kept.splice(Math.min(index, kept.length), 0, member);
    current.splice(0, current.length, ...kept);
  }
}
