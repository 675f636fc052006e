// Validation of Kubernetes manifests against the official API schemas, offline, two ways:
//  1. schema: kubernetes-models' validators — ajv code generated from the Kubernetes OpenAPI spec
//     (types, required fields, enums, formats), one model class per apiVersion/kind;
//  2. strict: the OpenAPI schemas leave additionalProperties open, so a misspelt field (readinesProbe)
//     would pass (1). The same package's TypeScript interfaces are generated from the same spec; each
//     manifest is type-checked as an object literal of its kind, whose excess-property check rejects
//     any field the API does not define (what kubeconform's -strict does).
import path from 'node:path';
import ts from 'typescript';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, PersistentVolumeClaim, Service } from 'kubernetes-models/v1';

interface Kind {
  model: new (data: never) => { validate(): void };
  types: [module: string, name: string];
}
const KINDS: Record<string, Kind> = {
  'apps/v1/Deployment': { model: Deployment as never, types: ['kubernetes-models/apps/v1/Deployment', 'IDeployment'] },
  'v1/Service': { model: Service as never, types: ['kubernetes-models/v1/Service', 'IService'] },
  'v1/ConfigMap': { model: ConfigMap as never, types: ['kubernetes-models/v1/ConfigMap', 'IConfigMap'] },
  'v1/PersistentVolumeClaim': { model: PersistentVolumeClaim as never, types: ['kubernetes-models/v1/PersistentVolumeClaim', 'IPersistentVolumeClaim'] },
  'autoscaling/v2/HorizontalPodAutoscaler': { model: HorizontalPodAutoscaler as never, types: ['kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', 'IHorizontalPodAutoscaler'] },
};

export interface Manifest {
  label: string; // file#index
  obj: { apiVersion?: string; kind?: string } & Record<string, unknown>;
}

const kindOf = (m: Manifest) => `${m.obj.apiVersion}/${m.obj.kind}`;

/** Schema errors, one string per failing manifest (empty: all valid). */
export function schemaErrors(manifests: readonly Manifest[]): string[] {
  const errors: string[] = [];
  for (const m of manifests) {
    const kind = KINDS[kindOf(m)];
    if (!kind) {
      errors.push(`${m.label}: no schema for ${kindOf(m)} (add it to test/deploy/k8s-validate.ts)`);
      continue;
    }
    try {
      new kind.model(m.obj as never).validate();
    } catch (err) {
      errors.push(`${m.label}: ${(err as Error).message}`);
    }
  }
  return errors;
}

/** Unknown-field (and type) errors from type-checking each manifest against its generated interface. */
export function strictErrors(manifests: readonly Manifest[], root: string): string[] {
  const file = path.join(root, 'test', 'deploy', '__k8s_manifests__.ts'); // virtual: never written
  const lines: string[] = [];
  const owner: string[] = []; // line number → manifest label
  manifests.forEach((m, i) => {
    const kind = KINDS[kindOf(m)];
    if (!kind) return;
    const body = [`import type { ${kind.types[1]} as T${i} } from '${kind.types[0]}';`, `export const m${i}: T${i} = ${JSON.stringify(m.obj, null, 1)};`];
    for (const l of body.join('\n').split('\n')) {
      lines.push(l);
      owner.push(m.label);
    }
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, skipLibCheck: true, types: [] };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    return `${owner[line] ?? '?'}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}
