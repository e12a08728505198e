/** An API key as the state file keeps it: its hash, never the key. */
export interface ApiKeyRecord {
  id: string;
  org_id: string;
  /** sha256 of the key; the key itself is shown once and never stored here. */
  sha256: string;
  created_at: string;
  name: string;
  /** Its prefix and last four characters, made while the plaintext was at hand. */
  masked_key: string;
  created_by: { id: string; email: string; name: string | null };
  expires_at: string | null;
  deleted_at: string | null;
  /** The lifetime it was made with, in days: a rotation that names none gives the new key the same. */
  lifetime_days: number | null;
  project_id: string | null;
  /** Minted for one invocation and revoked when it ends: not one of the organization's keys to manage. */
  minted?: true;
}
