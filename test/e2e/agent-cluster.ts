// The fixture most e2e files share: the namespace cluster, the fake API server
// holding this node, and the real agent programming the node namespace.

import { FakeApiServer } from '../fake-apiserver/index.ts';
import { nodeObject, startAgentProcess, type AgentProcess } from './agent-process.ts';
import { createCluster, type Cluster } from './topology.ts';

export interface AgentCluster {
  cluster: Cluster;
  api: FakeApiServer;
  agent: AgentProcess;
  /** Stops the agent and the server and deletes the namespaces; E2E_LOGS=1 prints the agent's log first. */
  destroy(): Promise<void>;
}

/** seed runs before the agent starts, so what it creates arrives in the agent's first list. */
export async function startAgentCluster(
  pods: string[],
  agentArgs: string[] = [],
  seed?: (api: FakeApiServer) => void,
): Promise<AgentCluster> {
  const cluster = await createCluster(pods);
  let api: FakeApiServer | undefined;
  let agent: AgentProcess | undefined;
  const destroy = async () => {
    if (process.env.E2E_LOGS) console.log(agent?.logs());
    await agent?.stop();
    await api?.close();
    await cluster.destroy();
  };
  try {
    api = await FakeApiServer.start();
    api.create('nodes', nodeObject('node-a', 'zone-a', 'region-1', cluster.nodeIPv4));
    seed?.(api);
    agent = await startAgentProcess(api, cluster.node.name, agentArgs);
    return { cluster, api, agent, destroy };
  } catch (e) {
    await destroy();
    throw e;
  }
}
