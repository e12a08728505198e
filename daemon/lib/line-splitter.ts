import { StringDecoder } from 'node:string_decoder';

/**
 * Splits a child's output into lines for log events. An action may print megabytes without a
 * newline: a line longer than maxLineChars is emitted in pieces, so the daemon never holds more
 * than one bounded line per stream (readline has no such bound).
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  /** The line so far, in the pieces it came in: joined once, when it ends (appending chunk by chunk and searching it each time was quadratic). */
  private parts: string[] = [];
  private partsLength = 0;

  constructor(
    private readonly emit: (line: string) => void,
    private readonly maxLineChars = 16_384,
  ) {}

  write(chunk: Buffer | string): void {
    let text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    let newline: number;
    while ((newline = text.indexOf('\n')) >= 0) {
      this.parts.push(text.slice(0, newline));
      this.emitLine(this.take());
      text = text.slice(newline + 1);
    }
    if (text) {
      this.parts.push(text);
      this.partsLength += text.length;
    }
    if (this.partsLength >= this.maxLineChars) {
      let pending = this.take();
      while (pending.length >= this.maxLineChars) {
        this.emit(pending.slice(0, this.maxLineChars));
        pending = pending.slice(this.maxLineChars);
      }
      if (pending) {
        this.parts.push(pending);
        this.partsLength = pending.length;
      }
    }
  }

  /** The last line, when the stream ended without a newline. */
  end(): void {
    this.parts.push(this.decoder.end());
    const rest = this.take();
    if (rest) this.emitLine(rest);
  }

  private take(): string {
    const line = this.parts.join('');
    this.parts = [];
    this.partsLength = 0;
    return line;
  }

  private emitLine(line: string): void {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    for (let i = 0; i < text.length || i === 0; i += this.maxLineChars) this.emit(text.slice(i, i + this.maxLineChars));
  }
}
