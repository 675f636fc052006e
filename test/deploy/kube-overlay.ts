// container/k8s/deployment.yaml as `podman kube play` (podman 4.3) can run it on one machine, for
// test/deploy/container.e2e.test.ts only; every change is listed here, the rest is played as written:
//  - native sidecars: podman 4.3 has no init containers with restartPolicy: Always, so the engine moves
//    to `containers` (the gateway answers /ready 503 until the engine's socket is up, as in a pod), and
//    the test stops the gateway, then the engine, as Kubernetes would;
//  - images: the image under test instead of the registry's;
//  - the engine's CPU limit: 1 core (this machine has 2), so that --threads (ERNIE_EDGE_THREADS) is seen to follow it;
//  - a hostPort on the gateway's http port (no Service or kube-proxy here);
//  - the placeholder's cache on a named volume shared with the other container tests (generated
//    once), instead of the tmp emptyDir (the PVC is empty here: the engine serves the placeholder).
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { ROOT } from './container-engine.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, rewritten path by path
type Obj = Record<string, any>; // manifests are plain YAML

export function kubeOverlay(o: { image: string; hostPort: number; cacheVolume: string }): string {
  const doc = parseDocument(readFileSync(`${ROOT}container/k8s/deployment.yaml`, 'utf8'));
  const dep = doc.toJS() as Obj;
  const pod = dep.spec.template.spec;
  const engine = pod.initContainers.find((c: Obj) => c.name === 'engine');
  delete engine.restartPolicy;
  pod.containers = [engine, ...pod.containers];
  delete pod.initContainers;
  for (const c of pod.containers) c.image = o.image;
  engine.resources.limits.cpu = '1';
  engine.resources.requests.cpu = '1';
  const gateway = pod.containers.find((c: Obj) => c.name === 'gateway');
  gateway.ports.find((p: Obj) => p.name === 'http').hostPort = o.hostPort;
  engine.env = engine.env.filter((e: Obj) => e.name !== 'ERNIE_EDGE_CACHE');
  engine.volumeMounts.push({ name: 'placeholder-cache', mountPath: '/home/node/.cache/ernie-edge' });
  pod.volumes.push({ name: 'placeholder-cache', persistentVolumeClaim: { claimName: o.cacheVolume } });
  return JSON.stringify(dep, null, 2); // JSON is YAML
}
