// Splits a byte stream into newline-terminated lines without decoding bytes
// that are not yet complete: chunks are searched for 0x0A with indexOf, and a
// line is only turned into a string once whole, so a multi-byte character cut
// across two chunks is never mangled and no per-character work is done in JS.

export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Refuse to buffer a single line beyond this (a broken stream, not a big object). */
  private readonly maxLineBytes: number;

  constructor(maxLineBytes = 64 * 1024 * 1024) {
    this.maxLineBytes = maxLineBytes;
  }

  /** Calls `onLine` for each complete, non-empty line in `chunk`. */
  push(chunk: Buffer, onLine: (line: string) => void): void {
    let start = 0;
    let nl = chunk.indexOf(10, start);
    while (nl !== -1) {
      let line: string;
      if (this.pendingBytes > 0) {
        this.pending.push(chunk.subarray(start, nl));
        line = Buffer.concat(this.pending, this.pendingBytes + nl - start).toString('utf8');
        this.pending = [];
        this.pendingBytes = 0;
      } else {
        line = chunk.toString('utf8', start, nl);
      }
      if (line.length > 0 && line !== '\r') onLine(line);
      start = nl + 1;
      nl = chunk.indexOf(10, start);
    }
    if (start < chunk.length) {
      this.pendingBytes += chunk.length - start;
      if (this.pendingBytes > this.maxLineBytes) {
        throw new RangeError(`watch line longer than ${this.maxLineBytes} bytes`);
      }
      this.pending.push(chunk.subarray(start));
    }
  }

  /** Bytes of an unterminated last line (a stream that ends here was cut). */
  get remainder(): number {
    return this.pendingBytes;
  }
}
