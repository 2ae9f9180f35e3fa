// Contract between native/link-monitor.cc and src/links/link-monitor.ts.
// Owned by the LinkMonitor work; src/native.ts only references the constructor type.

export interface NativeLinkMonitorConstructor {
  new (options: { netns?: string }): unknown;
}
