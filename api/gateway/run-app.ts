import type { FastifyInstance } from 'fastify';
import type { HangarConfig } from '../../core/config';
import type { AppOptions } from '../fastify';
import { buildGatewayBase } from './shared';

/** The run_url listener: the inference gateway for agents, models and MCP servers. */
export async function buildRunApp(config: HangarConfig, options: AppOptions = {}): Promise<FastifyInstance> {
  return buildGatewayBase(config, options);
}
