import { ApiCallError } from '../src/client.js';

/** The ApiCallError of a failed answer the CLI read itself (multipart uploads, event streams). */
export const apiError = (status: number, text: string): ApiCallError => ApiCallError.fromAnswer(status, text);
