// The --config file: a KubeProxyConfiguration as kube-proxy 1.32 reads it, and
// optionally a KubeNftProxyConfiguration document of ours after it (YAML
// documents separated by `---`). Decoding is strict: duplicate keys, unknown
// fields, wrong types and bad values are errors naming the field's path.
// Pure text in, configuration out; and back to text for --write-config-to.

import { createRequire } from 'node:module';
import { formatDuration } from './duration.ts';
import {
  defaultedKubeProxyConfiguration,
  KUBE_PROXY_API_VERSION,
  KUBE_PROXY_KIND,
  KUBE_PROXY_SCHEMA,
  type DeepPartial,
  type KubeProxyConfiguration,
} from './kube-proxy-config.ts';
import {
  defaultedOwnConfiguration,
  OWN_API_VERSION,
  OWN_KIND,
  OWN_SCHEMA,
  ownConfigProblems,
  type KubeNftProxyConfiguration,
} from './own-config.ts';
import { ConfigError, decodeObject, type Schema } from './schema.ts';
import { kubeProxyConfigProblems, throwProblems } from './validate-kube-proxy.ts';

// The YAML parser is ~70 modules and ~20 ms of CPU at every start; only runs
// with --config or --write-config-to need it, so it is loaded when they do.
const requireHere = createRequire(import.meta.url);
const yaml = (): typeof import('yaml') => requireHere('yaml') as typeof import('yaml');

export interface Configuration {
  kubeProxy: KubeProxyConfiguration;
  own: KubeNftProxyConfiguration;
  /** Whether the file held a document of our own kind (its fields then win over our flags). */
  hasOwnDocument: boolean;
}

function where(doc: number, path: string): string {
  return doc === 0 ? path : `document ${doc + 1}: ${path}`;
}

/** Decodes, defaults and validates the file's text; throws ConfigError with the field's path. */
export function parseConfigFile(text: string): Configuration {
  const docs = yaml().parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false, schema: 'core' });
  if (!Array.isArray(docs)) throw new ConfigError('', 'the file holds no YAML document');
  let kubeProxy: KubeProxyConfiguration | undefined;
  let own: KubeNftProxyConfiguration | undefined;
  docs.forEach((doc, i) => {
    const err = doc.errors[0];
    if (err) throw new ConfigError(where(i, ''), `not valid YAML: ${err.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const head = (typeof value === 'object' && !Array.isArray(value) ? value : {}) as Record<string, unknown>;
    const kindOf = `${String(head.apiVersion)} ${String(head.kind)}`;
    if (kindOf === `${KUBE_PROXY_API_VERSION} ${KUBE_PROXY_KIND}`) {
      if (kubeProxy) throw new ConfigError(where(i, 'kind'), `a second ${KUBE_PROXY_KIND}`);
      kubeProxy = decodeDocument(
        KUBE_PROXY_SCHEMA,
        value,
        i,
        (d) => defaultedKubeProxyConfiguration(d as DeepPartial<KubeProxyConfiguration>),
        kubeProxyConfigProblems,
      );
    } else if (kindOf === `${OWN_API_VERSION} ${OWN_KIND}`) {
      if (own) throw new ConfigError(where(i, 'kind'), `a second ${OWN_KIND}`);
      own = decodeDocument(
        OWN_SCHEMA,
        value,
        i,
        (d) => defaultedOwnConfiguration(d as Partial<KubeNftProxyConfiguration>),
        ownConfigProblems,
      );
    } else {
      throw new ConfigError(
        where(i, head.apiVersion === undefined ? 'apiVersion' : 'kind'),
        `${kindOf} is not ${KUBE_PROXY_API_VERSION} ${KUBE_PROXY_KIND} or ${OWN_API_VERSION} ${OWN_KIND}`,
      );
    }
  });
  if (!kubeProxy) throw new ConfigError('kind', `the file holds no ${KUBE_PROXY_API_VERSION} ${KUBE_PROXY_KIND}`);
  return { kubeProxy, own: own ?? defaultedOwnConfiguration(), hasOwnDocument: own !== undefined };
}

function decodeDocument<T>(
  schema: Schema,
  value: unknown,
  doc: number,
  withDefaults: (d: unknown) => T,
  problems: (c: T) => ConfigError[],
): T {
  try {
    const config = withDefaults(decodeObject(schema, value));
    throwProblems(problems(config));
    return config;
  } catch (e) {
    if (e instanceof ConfigError && doc > 0) throw new ConfigError(where(doc, e.path), e.message.slice(e.path.length + 2));
    throw e;
  }
}

/** The value as it is written in a file: durations as Go durations, everything else as is. */
function encode(schema: Schema, value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(schema).sort()) {
    const field = schema[name]!;
    const v = value[name];
    if (field.kind === 'duration' || field.kind === 'duration-or-ns') out[name] = formatDuration(v as number);
    else if (field.kind === 'object') out[name] = encode(field.fields, v as Record<string, unknown>);
    else if (field.kind === 'list') out[name] = (v as Record<string, unknown>[]).map((x) => encode(field.of, x));
    else out[name] = v;
  }
  return out;
}

/** Both documents of the effective configuration, as --write-config-to writes them; parseConfigFile reads them back unchanged. */
export function formatConfigFile(c: Pick<Configuration, 'kubeProxy' | 'own'>): string {
  const kp = yaml().stringify(encode(KUBE_PROXY_SCHEMA, c.kubeProxy as unknown as Record<string, unknown>), { lineWidth: 0 });
  const own = yaml().stringify(encode(OWN_SCHEMA, c.own as unknown as Record<string, unknown>), { lineWidth: 0 });
  return `${kp}---\n${own}`;
}
