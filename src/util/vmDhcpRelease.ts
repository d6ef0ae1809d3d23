/**
 * What differs between harvester/vm-dhcp-controller releases that rollplane and the simulator both depend on, read
 * from the controller's version (its image tag). Sources: `pkg/controller/ippool/controller.go` (the hold annotation
 * and the refresh of `agentPodRef.image` came with v0.3.0: before it, DeployAgent never rewrote the image of a pool
 * that had an agent) and `cmd/controller/root.go` (`--image` split on `:` into exactly a name and a tag before v1.5.0;
 * `parseImageNameAndTag` from 1.5.0-dev.3 on). A tag that is not a version (`main-head`) is taken as today's code.
 */
import { parseSemverTag } from './imageReference.js';

export interface VmDhcpRelease {
  /** The hold annotation exists and the controller moves running agents to its `--image` (v0.3.0 on). */
  hasHold: boolean;
  /** How `--image` is parsed: `split` (exactly one `:`) before v1.5.0, `parseImageNameAndTag` from then on. */
  imageParser: 'split' | 'parseImageNameAndTag';
}

export function vmDhcpRelease(version: string | undefined): VmDhcpRelease {
  const v = parseSemverTag(version ?? '');
  if (!v) return { hasHold: true, imageParser: 'parseImageNameAndTag' };
  const below = (major: number, minor: number) => v.major < major || (v.major === major && v.minor < minor);
  // 1.5.0's prereleases up to dev.2 still split; every 1.5.0 prerelease is taken as splitting.
  const splits = below(1, 5) || (v.major === 1 && v.minor === 5 && v.patch === 0 && v.prerelease.length > 0);
  return { hasHold: !below(0, 3), imageParser: splits ? 'split' : 'parseImageNameAndTag' };
}

/**
 * `--image` as the release parses it: the image it records and deploys (`repository:tag`), or the Error it exits with.
 * - split: `strings.Split(image, ":")` must give exactly two parts ("Error parse agent image name");
 * - parseImageNameAndTag: split at the last `:`; none, or one before the last `/` (a registry port) → tag `latest`;
 *   a trailing `:` ("colon without tag") or more than two `:` ("multiple colons found") is an error.
 */
export function parseAgentImage(image: string, parser: VmDhcpRelease['imageParser']): string | Error {
  if (parser === 'split') return image.split(':').length === 2 ? image : new Error('Error parse agent image name');
  const idx = image.lastIndexOf(':');
  if (idx === -1) return `${image}:latest`;
  if (idx === image.length - 1) return new Error('invalid image name: colon without tag');
  if (image.split(':').length - 1 > 2) return new Error('invalid image name: multiple colons found');
  if (idx <= image.lastIndexOf('/')) return `${image}:latest`;
  return image;
}
