/** ROLLPLANE_SIM_FLEET / --sim-fleet accept the upstream= part and refuse unknown behaviours at start. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

const noFiles = { homeDir: '/nonexistent-home', fileExists: () => false };

describe('the simulator fleet setting with upstream controllers', () => {
  it.each([
    'demo,upstream=vm-dhcp+vc-manager',
    'pools=5,nodes=2,upstream=caa',
    'demo,upstream=vc-manager:partial-upgrade+vm-dhcp:no-agent',
    'empty,upstream=none',
    'demo',
  ])('accepts %s', (fleet) => {
    expect(loadConfig({ ROLLPLANE_SIM_FLEET: fleet }, [], noFiles).sim.fleet).toBe(fleet);
    expect(loadConfig({}, ['--sim-fleet', fleet], noFiles).sim.fleet).toBe(fleet);
  });

  it.each(['demo,upstream=bogus', 'demo,upstream=', 'demo,upstream=vm-dhcp,vc-manager', 'upstream=vm-dhcp,demo'])(
    'refuses %s naming the setting and the choices',
    (fleet) => {
      expect(() => loadConfig({ ROLLPLANE_SIM_FLEET: fleet }, [], noFiles)).toThrowError(ConfigError);
      expect(() => loadConfig({ ROLLPLANE_SIM_FLEET: fleet }, [], noFiles)).toThrowError(
        /^invalid configuration: ROLLPLANE_SIM_FLEET: .*vm-dhcp\|vm-dhcp:no-agent\|vc-manager/,
      );
    },
  );
});
