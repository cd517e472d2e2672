import { config } from '../config.js';

/** The admin master key. Read from the environment locally (README § Configuration). */
export async function adminApiKey(): Promise<string> {
  return config.ADMIN_API_KEY;
}
