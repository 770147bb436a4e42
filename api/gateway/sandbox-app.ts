import type { FastifyInstance } from 'fastify';
import type { HangarConfig } from '../../core/config';
import type { AppOptions } from '../fastify';
import { buildGatewayBase } from './shared';

/** The sandbox gateway listener: routes {sandbox_url} requests to the sandbox's own API. */
export async function buildSandboxGatewayApp(config: HangarConfig, options: AppOptions = {}): Promise<FastifyInstance> {
  return buildGatewayBase(config, options);
}
