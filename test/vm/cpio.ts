// A minimal writer of the "newc" cpio format the kernel unpacks as an
// initramfs. Written here rather than shelling out to cpio(1) so that the
// archive is a pure, deterministic function of its entries (fixed inode
// numbers and times): the cache key of the initramfs then means something.

export interface CpioEntry {
  /** Path inside the archive, without a leading slash ('bin/busybox'). */
  path: string;
  type: 'dir' | 'file' | 'symlink';
  /** Permission bits (0o755...). */
  mode: number;
  /** File contents, or the symlink's target. */
  data?: Uint8Array | string;
}

const TYPE_BITS = { dir: 0o040000, file: 0o100000, symlink: 0o120000 } as const;

function hex8(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function pad4(parts: Uint8Array[], length: number): number {
  const extra = (4 - (length % 4)) % 4;
  if (extra) parts.push(new Uint8Array(extra));
  return length + extra;
}

function header(ino: number, mode: number, nlink: number, size: number, nameLength: number): string {
  // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
  // rdevmajor, rdevminor, namesize, check
  return `070701${[ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, nameLength, 0].map(hex8).join('')}`;
}

export function writeCpio(entries: readonly CpioEntry[]): Buffer {
  const parts: Uint8Array[] = [];
  let offset = 0;
  const push = (ino: number, mode: number, nlink: number, name: string, data: Uint8Array) => {
    const nameBytes = Buffer.from(`${name}\0`, 'utf8');
    const head = Buffer.from(header(ino, mode, nlink, data.length, nameBytes.length), 'ascii');
    parts.push(head, nameBytes);
    offset = pad4(parts, offset + head.length + nameBytes.length);
    if (data.length) {
      parts.push(data);
      offset = pad4(parts, offset + data.length);
    }
  };
  entries.forEach((e, i) => {
    const data = typeof e.data === 'string' ? Buffer.from(e.data, 'utf8') : (e.data ?? new Uint8Array());
    push(i + 1, TYPE_BITS[e.type] | (e.mode & 0o7777), e.type === 'dir' ? 2 : 1, e.path, data);
  });
  push(0, 0, 1, 'TRAILER!!!', new Uint8Array());
  return Buffer.concat(parts);
}
