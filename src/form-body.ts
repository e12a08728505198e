/**
 * A multipart body as Kernel's Node SDK encodes one: files (Blob or File) as file parts, nested
 * objects as `key[sub]` fields (env_vars[KEY]), other values as text; undefined is left out.
 */
export function formBody(fields: Record<string, unknown>, form = new FormData(), prefix?: string): FormData {
  for (const [key, value] of Object.entries(fields)) {
    const name = prefix ? `${prefix}[${key}]` : key;
    if (value === undefined) continue;
    if (value instanceof Blob) form.append(name, value, value instanceof File ? value.name : name);
    else if (value !== null && typeof value === 'object') formBody(value as Record<string, unknown>, form, name);
    else form.append(name, String(value));
  }
  return form;
}
