// Where the API server is and how to authenticate, read without
// @kubernetes/client-node for the common cases.
//
// Why: importing client-node costs ~80 MiB RSS (measured: 76-80 MiB for the
// package or for a deep import of dist/config.js, which pulls in the whole
// generated API client through gen/index.js; the package has no "exports"
// map but no lighter path to KubeConfig either), over half of the agent's
// budget of 150 MiB. What a node agent meets in practice is small:
// - in-cluster: KUBERNETES_SERVICE_HOST/PORT, the service account's CA, and
//   its token, re-read on every request (projected tokens rotate; client-go
//   re-reads the file too);
// - a kubeconfig file (YAML or JSON): server, certificate-authority(-data),
//   insecure-skip-tls-verify, tls-server-name; token, tokenFile (re-read),
//   client-certificate(-data) + client-key(-data), username/password.
// proxy-url is ours too (see rotating-client.ts). Exec plugins, auth-provider
// (oidc, gcp, azure), impersonation and a KUBECONFIG list of several files to
// merge are handed to client-node (`needsClientNode`), imported only then, so
// their semantics are client-node's and only those setups pay for it. A field
// of the cluster, user or context we do not know is refused with its path:
// never silently ignored.

import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { assertNever } from '../../assert-never.ts';

export class KubeConfigError extends Error {
  readonly code = 'ERR_KUBECONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export type Credentials =
  | { kind: 'none' }
  | { kind: 'token'; token: string }
  /** Re-read on every request. */
  | { kind: 'token-file'; path: string }
  | { kind: 'basic'; username: string; password: string };

export interface ClusterAccess {
  /** Where it came from, for logs: 'in-cluster' or the file path. */
  source: string;
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  insecureSkipTLSVerify: boolean;
  servername?: string;
  credentials: Credentials;
  /** Files the CA, certificate and key were read from: re-read when they change (rotation). */
  files?: { ca?: string; cert?: string; key?: string };
  /** The cluster's proxy-url. */
  proxyUrl?: string;
}

/** What client-node must load instead, and why. */
export interface NeedsClientNode {
  needsClientNode: string;
  /** The kubeconfig file(s), or undefined for client-node's default chain. */
  file?: string;
}

export interface LoadOptions {
  /** Environment (default process.env): KUBERNETES_SERVICE_HOST/PORT, KUBECONFIG, HOME. */
  env?: Record<string, string | undefined>;
  /** Service account directory for in-cluster (default SERVICE_ACCOUNT_DIR). */
  serviceAccountDir?: string;
}

type Doc = Record<string, unknown>;

function isDoc(v: unknown): v is Doc {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(o: Doc, k: string): string | undefined {
  const v = o[k];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new KubeConfigError(`${k} is not a string`);
  return v;
}

function named(list: unknown, name: string, what: string, field: string): Doc {
  if (!Array.isArray(list)) throw new KubeConfigError(`kubeconfig has no ${what}s`);
  const hit = list.find((e) => isDoc(e) && e.name === name);
  if (!isDoc(hit) || !isDoc(hit[field])) throw new KubeConfigError(`kubeconfig has no ${what} named ${JSON.stringify(name)}`);
  return hit[field] as Doc;
}

async function parseDocument(text: string, file: string): Promise<Doc> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    try {
      const { parse } = await import('yaml');
      doc = parse(text);
    } catch (e) {
      throw new KubeConfigError(`${file}: not YAML or JSON (${(e as Error).message})`);
    }
  }
  if (!isDoc(doc)) throw new KubeConfigError(`${file}: not a kubeconfig object`);
  return doc;
}

async function fileOrData(
  base: string,
  doc: Doc,
  fileKey: string,
  dataKey: string,
  files?: Record<string, string>,
  as?: string,
): Promise<Buffer | undefined> {
  const data = str(doc, dataKey);
  if (data !== undefined) return Buffer.from(data, 'base64');
  const path = str(doc, fileKey);
  if (path === undefined) return undefined;
  const full = isAbsolute(path) ? path : join(base, path);
  if (files && as) files[as] = full;
  try {
    return await readFile(full);
  } catch (e) {
    throw new KubeConfigError(`${fileKey} ${full}: ${(e as Error).message}`);
  }
}

// What a kubeconfig's cluster, user and context may hold (k8s.io/client-go/tools/clientcmd/api/v1).
// disable-compression is honoured as it stands: we never ask for compressed responses.
const CLUSTER_FIELDS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'proxy-url',
  'disable-compression',
  'extensions',
]);
const USER_FIELDS = new Set([
  'token',
  'tokenFile',
  'username',
  'password',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'exec',
  'auth-provider',
  'as',
  'as-uid',
  'as-groups',
  'as-user-extra',
  'extensions',
]);
const CONTEXT_FIELDS = new Set(['cluster', 'user', 'namespace', 'extensions']);

function refuseUnknown(doc: Doc, known: Set<string>, where: string): void {
  for (const k of Object.keys(doc)) {
    if (!known.has(k)) throw new KubeConfigError(`${where}.${k}: not a kubeconfig field this client can honour`);
  }
}

/** Reads one kubeconfig file's current context. */
async function loadKubeConfigFile(file: string): Promise<ClusterAccess | NeedsClientNode> {
  const path = resolve(file);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: ${(e as Error).message}`);
  }
  const doc = await parseDocument(text, path);
  const base = dirname(path);
  const current = str(doc, 'current-context');
  if (current === undefined) throw new KubeConfigError(`${path}: no current-context`);
  const context = named(doc.contexts, current, 'context', 'context');
  const clusterName = str(context, 'cluster');
  if (clusterName === undefined) throw new KubeConfigError(`${path}: context ${current} names no cluster`);
  const cluster = named(doc.clusters, clusterName, 'cluster', 'cluster');
  const userName = str(context, 'user');
  const user = userName === undefined ? {} : named(doc.users, userName, 'user', 'user');
  refuseUnknown(context, CONTEXT_FIELDS, `${path}: contexts[${current}].context`);
  refuseUnknown(cluster, CLUSTER_FIELDS, `${path}: clusters[${clusterName}].cluster`);
  refuseUnknown(user, USER_FIELDS, `${path}: users[${userName}].user`);

  for (const k of ['exec', 'auth-provider', 'as', 'as-uid', 'as-groups', 'as-user-extra']) {
    if (user[k] !== undefined && user[k] !== null) return { needsClientNode: `user.${k}`, file: path };
  }

  const server = str(cluster, 'server');
  if (server === undefined) throw new KubeConfigError(`${path}: cluster ${clusterName} has no server`);
  const token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile');
  const username = str(user, 'username');
  let credentials: Credentials = { kind: 'none' };
  if (token !== undefined) credentials = { kind: 'token', token };
  else if (tokenFile !== undefined) credentials = { kind: 'token-file', path: isAbsolute(tokenFile) ? tokenFile : join(base, tokenFile) };
  else if (username !== undefined) credentials = { kind: 'basic', username, password: str(user, 'password') ?? '' };

  const access: ClusterAccess = {
    source: path,
    server,
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    credentials,
  };
  const files: Record<string, string> = {};
  const ca = await fileOrData(base, cluster, 'certificate-authority', 'certificate-authority-data', files, 'ca');
  if (ca) access.ca = ca;
  const cert = await fileOrData(base, user, 'client-certificate', 'client-certificate-data', files, 'cert');
  const key = await fileOrData(base, user, 'client-key', 'client-key-data', files, 'key');
  if (Object.keys(files).length > 0) access.files = files;
  const proxyUrl = str(cluster, 'proxy-url');
  if (proxyUrl !== undefined) access.proxyUrl = proxyUrl;
  if ((cert === undefined) !== (key === undefined))
    throw new KubeConfigError(`${path}: user ${userName} has a client certificate without a key, or a key without a certificate`);
  if (cert && key) {
    access.cert = cert;
    access.key = key;
  }
  const servername = str(cluster, 'tls-server-name');
  if (servername) access.servername = servername;
  return access;
}

/** In-cluster access: the service account mounted into the pod. */
async function loadInCluster(o: LoadOptions = {}): Promise<ClusterAccess> {
  const env = o.env ?? process.env;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) throw new KubeConfigError('not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset');
  const dir = o.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  let ca: Buffer;
  try {
    ca = await readFile(join(dir, 'ca.crt'));
  } catch (e) {
    throw new KubeConfigError(`in-cluster: cannot read the service account CA: ${(e as Error).message}`);
  }
  return {
    source: 'in-cluster',
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca,
    files: { ca: join(dir, 'ca.crt') },
    insecureSkipTLSVerify: false,
    credentials: { kind: 'token-file', path: join(dir, 'token') },
  };
}

/**
 * An explicit file; else in-cluster when KUBERNETES_SERVICE_HOST is set;
 * else $KUBECONFIG (one file; several are merged by client-node); else
 * ~/.kube/config.
 */
export async function loadClusterAccess(file: string | undefined, o: LoadOptions = {}): Promise<ClusterAccess | NeedsClientNode> {
  if (file) return loadKubeConfigFile(file);
  const env = o.env ?? process.env;
  if (env.KUBERNETES_SERVICE_HOST) return loadInCluster(o);
  const list = (env.KUBECONFIG ?? '').split(':').filter((p) => p !== '');
  if (list.length > 1) return { needsClientNode: 'KUBECONFIG lists several files' };
  if (list.length === 1) return loadKubeConfigFile(list[0]!);
  const home = env.HOME ?? homedir();
  return loadKubeConfigFile(join(home, '.kube', 'config'));
}

/** The request headers the credentials call for now (a token file is read again each time). */
export async function authHeaders(c: Credentials): Promise<Record<string, string>> {
  switch (c.kind) {
    case 'none':
      return {};
    case 'token':
      return { authorization: `Bearer ${c.token}` };
    case 'token-file': {
      let token: string;
      try {
        token = (await readFile(c.path, 'utf8')).trim();
      } catch (e) {
        throw new KubeConfigError(`cannot read token file ${c.path}: ${(e as Error).message}`);
      }
      return token ? { authorization: `Bearer ${token}` } : {};
    }
    case 'basic':
      return { authorization: `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}` };
    default:
      assertNever(c);
  }
}
