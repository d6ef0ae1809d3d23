/** Builders for the pod status a kubelet reports. Pure functions over (previous status, time). */
import type { KubeObject } from '../types.js';
import { type Condition, isoTime } from './kube.js';

/** Sets one condition, keeping lastTransitionTime when the status does not change and every other condition as is. */
export function withCondition(
  conditions: Condition[] | undefined,
  type: string,
  status: Condition['status'],
  now: number,
  reason?: string,
  message?: string,
): Condition[] {
  const list = conditions ?? [];
  const old = list.find((c) => c.type === type);
  const next: Condition = {
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime: old && old.status === status && old.lastTransitionTime ? old.lastTransitionTime : isoTime(now),
  };
  if (reason) next.reason = reason;
  if (message) next.message = message;
  return old ? list.map((c) => (c === old ? next : c)) : [...list, next];
}

export function readinessGatesPass(pod: KubeObject): boolean {
  const gates: { conditionType: string }[] = pod.spec?.readinessGates ?? [];
  const conditions: Condition[] = pod.status?.conditions ?? [];
  return gates.every((g) => conditions.some((c) => c.type === g.conditionType && c.status === 'True'));
}

export function containersOf(pod: KubeObject): { name: string; image: string }[] {
  return pod.spec?.containers ?? [];
}

export function imageID(image: string): string {
  return `docker-pullable://${image.split(':')[0]}@sha256:${simpleDigest(image)}`;
}

function simpleDigest(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    h1 = Math.imul(h1 ^ text.charCodeAt(i), 16777619) >>> 0;
    h2 = Math.imul(h2 ^ text.charCodeAt(i), 2246822519) >>> 0;
  }
  return (h1.toString(16).padStart(8, '0') + h2.toString(16).padStart(8, '0')).repeat(4);
}

export interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerState;
  lastState: ContainerState;
  containerID?: string;
}

export interface ContainerState {
  running?: { startedAt: string };
  waiting?: { reason: string; message?: string };
  terminated?: { exitCode: number; reason: string; startedAt?: string; finishedAt?: string };
}

export function runningContainer(
  name: string,
  image: string,
  now: number,
  restartCount: number,
  ready: boolean,
  lastState: ContainerState = {},
): ContainerStatus {
  return {
    name,
    image,
    imageID: imageID(image),
    containerID: `containerd://${simpleDigest(`${name}/${image}/${now}/${restartCount}`)}`,
    ready,
    started: true,
    restartCount,
    state: { running: { startedAt: isoTime(now) } },
    lastState,
  };
}

export function pullBackOffContainer(name: string, image: string, restartCount: number): ContainerStatus {
  return {
    name,
    image,
    imageID: '',
    ready: false,
    started: false,
    restartCount,
    state: {
      waiting: {
        reason: 'ImagePullBackOff',
        message: `Back-off pulling image "${image}"`,
      },
    },
    lastState: {},
  };
}
