import { StringDecoder } from 'node:string_decoder';

/**
 * Splits a child's output into lines for log events. An action may print megabytes without a
 * newline: a line longer than maxLineChars is emitted in pieces, so the daemon never holds more
 * than one bounded line per stream (readline has no such bound).
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  constructor(
    private readonly emit: (line: string) => void,
    private readonly maxLineChars = 16_384,
  ) {}

  write(chunk: Buffer | string): void {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    let newline: number;
    while ((newline = this.pending.indexOf('\n')) >= 0) {
      this.emitLine(this.pending.slice(0, newline));
      this.pending = this.pending.slice(newline + 1);
    }
    while (this.pending.length >= this.maxLineChars) {
      this.emit(this.pending.slice(0, this.maxLineChars));
      this.pending = this.pending.slice(this.maxLineChars);
    }
  }

  /** The last line, when the stream ended without a newline. */
  end(): void {
    this.pending += this.decoder.end();
    if (this.pending) this.emitLine(this.pending);
    this.pending = '';
  }

  private emitLine(line: string): void {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    for (let i = 0; i < text.length || i === 0; i += this.maxLineChars) this.emit(text.slice(i, i + this.maxLineChars));
  }
}
