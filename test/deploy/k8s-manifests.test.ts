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
      'Service/ernie-edge',
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
  }

  it('the Service selects the pods and targets the http port; the HPA scales the Deployment on the queue', () => {
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
