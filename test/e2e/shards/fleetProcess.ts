/**
 * A fleet of simulated clusters in a process of its own (the replicas under test and the test itself stay out of its
 * event loop): `mgmt`, the management cluster the replicas run against (their Leases, the member Secrets), and
 * `m-1` … `m-N`, the members, each with its own pools. Prints one JSON line (admin URL, kubeconfig files), then serves
 * until SIGTERM. Run as `node --import tsx fleetProcess.ts N FLEET`.
 */
import { startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';

const count = Number(process.argv[2] ?? '20');
const fleet = process.argv[3] ?? 'pools=2,nodes=1,peers=0';
const members = Array.from({ length: count }, (_, i) => ({ name: `m-${i + 1}`, fleet }));
const clusters = await startSimulatedClusters({ clusters: [{ name: 'mgmt' }, ...members], adminPort: 0, concurrency: 4 });
process.stdout.write(
  `${JSON.stringify({ adminUrl: clusters.adminUrl, kubeconfigs: Object.fromEntries([...clusters.clusters.values()].map((c) => [c.name, c.kubeconfigPath])) })}\n`,
);
process.once('SIGTERM', () => void clusters.stop().then(() => process.exit(0)));
