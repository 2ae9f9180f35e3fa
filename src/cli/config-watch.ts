// kube-proxy exits when its --config file changes, so that the DaemonSet
// restarts it with the new configuration. A ConfigMap volume updates the file
// by swapping a symlinked directory, which an inotify watch on the old file
// may never report: so the content is compared, on every watch event and on a
// short poll, and only a real change (or the file disappearing) counts.

import { readFile } from 'node:fs/promises';
import { watch, type FSWatcher } from 'node:fs';

export interface ConfigWatch {
  stop(): void;
}

export function watchConfigFile(path: string, initial: string, onChange: (reason: string) => void, pollMs = 2000): ConfigWatch {
  let done = false;
  let watcher: FSWatcher | undefined;
  const check = async () => {
    if (done) return;
    let now: string;
    try {
      now = await readFile(path, 'utf8');
    } catch (e) {
      if (done) return;
      done = true;
      onChange(`the configuration file cannot be read any more: ${(e as Error).message}`);
      return;
    }
    if (done || now === initial) return;
    done = true;
    onChange('the configuration file changed');
  };
  try {
    watcher = watch(path, { persistent: false }, () => void check());
    watcher.on('error', () => void check());
  } catch {
    // No inotify here (or too many watches): the poll alone notices the change.
  }
  const timer = setInterval(() => void check(), pollMs);
  timer.unref();
  return {
    stop() {
      done = true;
      clearInterval(timer);
      watcher?.close();
    },
  };
}
