import { NativeConnection } from '@temporalio/worker';

const CONNECT_ATTEMPTS = 60;

/** Workers may start before Temporal answers (first start on 2 cores): wait for it, bounded. */
export async function connectToTemporal(address: string): Promise<NativeConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await NativeConnection.connect({ address });
    } catch (err) {
      if (attempt >= CONNECT_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}
