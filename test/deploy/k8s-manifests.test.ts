// container/k8s/*.yaml: every document validates against the Kubernetes API schemas (and strictly:
// no unknown fields), and the pod has the shape the deployment docs promise (shared socket emptyDir,
// probes on /ready and /health, preStop drain, GPU limit in the CUDA variant, HPA on the queue metric).
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { schemaErrors, strictErrors, type Manifest } from './k8s-validate.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = `${ROOT}container/k8s/`;
const manifests: Manifest[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .flatMap((f) =>
    parseAllDocuments(readFileSync(DIR + f, 'utf8')).map((doc, i) => {
      if (doc.errors.length) throw new Error(`${f}: ${doc.errors.map((e) => e.message).join('; ')}`);
      return { label: `${f}#${i}`, obj: doc.toJS() as Manifest['obj'] };
    }),
  );

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON/YAML, read path by path in assertions
type Obj = Record<string, any>; // manifests are plain YAML
const find = (kind: string, name: string): Obj => manifests.find((m) => m.obj.kind === kind && (m.obj.metadata as Obj).name === name)!.obj as Obj;

describe('Kubernetes manifests', () => {
  it('are all there and valid against the API schemas, strictly', () => {
    expect(manifests.map((m) => `${m.obj.kind}/${(m.obj.metadata as Obj).name}`).sort()).toEqual([
      'ConfigMap/prometheus-adapter-ernie-edge',
      'Deployment/ernie-edge',
      'Deployment/ernie-edge-cuda',
      'HorizontalPodAutoscaler/ernie-edge',
      'HorizontalPodAutoscaler/ernie-edge-cuda',
      'PersistentVolumeClaim/ernie-edge-models',
      'Service/ernie-edge',
      'Service/ernie-edge-cuda',
    ]);
    expect(schemaErrors(manifests)).toEqual([]);
    expect(strictErrors(manifests, ROOT)).toEqual([]);
  });

  it('the validators do reject broken manifests (wrong type, missing field, unknown field)', () => {
    const dep = structuredClone(find('Deployment', 'ernie-edge'));
    const wrongType = structuredClone(dep);
    wrongType.spec.replicas = 'two';
    const missing = structuredClone(dep);
    delete missing.spec.template.spec.containers[0].name;
    const typo = structuredClone(dep);
    typo.spec.template.spec.containers[0].readinesProbe = typo.spec.template.spec.containers[0].readinessProbe;
    const broken = [wrongType, missing, typo].map((obj, i) => ({ label: `broken#${i}`, obj }));
    const schema = schemaErrors(broken);
    expect(schema).toHaveLength(2);
    expect(schema[0]).toMatch(/broken#0.*replicas/);
    expect(schema[1]).toMatch(/broken#1.*name/);
    const strict = strictErrors(broken, ROOT);
    expect(strict.some((e) => e.startsWith('broken#2') && e.includes('readinesProbe'))).toBe(true);
    expect(schemaErrors([{ label: 'x', obj: { apiVersion: 'v1', kind: 'Pod' } }])[0]).toMatch(/no schema for v1\/Pod/);
  });

  for (const name of ['ernie-edge', 'ernie-edge-cuda']) {
    it(`${name}: gateway + engine sidecar share the socket; probes, preStop drain, resources`, () => {
      const pod = find('Deployment', name).spec.template.spec;
      const [engine] = pod.initContainers;
      const [gateway] = pod.containers;
      expect(engine.restartPolicy).toBe('Always'); // native sidecar: stopped after the gateway drained
      const socketVol = pod.volumes.find((v: Obj) => v.emptyDir && v.name === 'engine-socket');
      expect(socketVol).toBeDefined();
      for (const c of [engine, gateway]) expect(c.volumeMounts).toContainEqual({ name: 'engine-socket', mountPath: '/run/ernie' });
      expect(engine.args.join(' ')).toContain('--engine unix:/run/ernie/engine.sock');
      expect(gateway.args.join(' ')).toContain('--engine unix:/run/ernie/engine.sock');
      expect(gateway.readinessProbe.httpGet.path).toBe('/ready');
      expect(gateway.livenessProbe.httpGet.path).toBe('/health');
      expect(gateway.lifecycle.preStop.exec.command[0]).toBe('sleep');
      const drain = Number(gateway.args[gateway.args.indexOf('--drain-timeout') + 1]);
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(drain + Number(gateway.lifecycle.preStop.exec.command[1]));
      for (const c of [engine, gateway]) expect(c.resources.limits.memory).toBeDefined();
      expect(engine.resources.limits['nvidia.com/gpu'] ?? null).toBe(name.endsWith('cuda') ? 1 : null);
    });

    it(`${name}: the model comes from the entrypoint only; --threads follows the engine's CPU limit`, () => {
      const [engine] = find('Deployment', name).spec.template.spec.initContainers;
      // The entrypoint adds --model /models when the PVC holds a config.json: a second one is a usage error.
      expect(engine.args.some((a: string) => a.startsWith('--model'))).toBe(false);
      expect(engine.volumeMounts).toContainEqual({ name: 'models', mountPath: '/models', readOnly: true });
      // The entrypoint turns ERNIE_EDGE_THREADS into --threads (test/deploy/entrypoint.e2e.test.ts).
      const env = engine.env.find((e: Obj) => e.name === 'ERNIE_EDGE_THREADS');
      expect(env.valueFrom.resourceFieldRef).toEqual({ containerName: 'engine', resource: 'limits.cpu', divisor: '1' });
      expect(engine.args.some((a: string) => a.startsWith('--threads'))).toBe(false);
      expect(Number(engine.resources.limits.cpu)).toBeGreaterThanOrEqual(1);
      expect(engine.resources.limits.cpu).toBe(engine.resources.requests.cpu);
    });
  }

  it('every Deployment is scaled by its HPA alone (no replicas to fight it) and has its own Service', () => {
    const deployments = manifests.filter((m) => m.obj.kind === 'Deployment').map((m) => m.obj as Obj);
    const hpas = manifests.filter((m) => m.obj.kind === 'HorizontalPodAutoscaler').map((m) => m.obj as Obj);
    const services = manifests.filter((m) => m.obj.kind === 'Service').map((m) => m.obj as Obj);
    for (const d of deployments) {
      expect(d.spec.replicas).toBeUndefined();
      expect(hpas.filter((h) => h.spec.scaleTargetRef.name === d.metadata.name)).toHaveLength(1);
      expect(d.spec.selector.matchLabels).toEqual(d.spec.template.metadata.labels);
    }
    // A Service selects the pods of exactly one Deployment: CPU and CUDA pods never share an entry.
    for (const svc of services) {
      const selected = deployments.filter((d) => Object.entries(svc.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v));
      expect(selected.map((d) => d.metadata.name)).toEqual([svc.metadata.name]);
    }
  });

  it('the models PVC exists; images are fully qualified; pods run as the uid their images were built with', () => {
    const claims = manifests.filter((m) => m.obj.kind === 'PersistentVolumeClaim').map((m) => (m.obj.metadata as Obj).name);
    const dockerUid = (file: string) => {
      const users = readFileSync(`${ROOT}container/${file}`, 'utf8').match(/^USER\s+(\S+)/gm)!;
      return Number(/^USER\s+(\d+)/.exec(users.at(-1)!)?.[1]); // numeric, so runAsNonRoot can check it
    };
    for (const name of ['ernie-edge', 'ernie-edge-cuda']) {
      const pod = find('Deployment', name).spec.template.spec;
      for (const v of pod.volumes.filter((v: Obj) => v.persistentVolumeClaim)) expect(claims).toContain(v.persistentVolumeClaim.claimName);
      for (const c of [...pod.initContainers, ...pod.containers]) {
        // registry host first (a dot, a port or localhost): no short name resolved by the node's settings
        expect(c.image).toMatch(/^([a-z0-9-]+\.[a-z0-9.-]+(:\d+)?|localhost(:\d+)?)\/[a-z0-9./-]+:[\w.-]+$/);
        const uid = dockerUid(c.image.endsWith('-cuda') ? 'Dockerfile.cuda' : 'Dockerfile');
        expect(c.securityContext.runAsUser ?? pod.securityContext.runAsUser).toBe(uid);
      }
      expect(pod.securityContext.runAsNonRoot).toBe(true);
    }
  });

  it('the Service selects the pods and targets the http port; the HPA scales the Deployment on the queue', () => {
    for (const name of ['ernie-edge', 'ernie-edge-cuda']) {
      expect(find('Service', name).spec.ports[0].targetPort).toBe('http');
      expect(find('HorizontalPodAutoscaler', name).spec.metrics[0].pods.metric.name).toBe('vllm_num_requests_waiting');
    }
    const svc = find('Service', 'ernie-edge');
    const labels = find('Deployment', 'ernie-edge').spec.template.metadata.labels;
    for (const [k, v] of Object.entries(svc.spec.selector)) expect(labels[k]).toBe(v);
    expect(svc.spec.ports[0].targetPort).toBe('http');
    const hpa = find('HorizontalPodAutoscaler', 'ernie-edge');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'ernie-edge' });
    expect(hpa.spec.metrics[0].pods.metric.name).toBe('vllm_num_requests_waiting');
    const rules = find('ConfigMap', 'prometheus-adapter-ernie-edge').data['config.yaml'];
    const rule = (parseAllDocuments(rules)[0]!.toJS() as Obj).rules[0];
    expect(rule.seriesQuery).toContain('vllm:num_requests_waiting');
    expect('vllm:num_requests_waiting'.replace(new RegExp(rule.name.matches), rule.name.as.replace('${1}', '$1'))).toBe('vllm_num_requests_waiting');
  });
});
