// The keys that sign and check client tokens and room tokens, loaded once per process: part of the services object
// a composition root builds (shared/services.ts), so nothing keeps them in a module-level memo.
import type { Config } from '../config.ts';
import type { Db } from '../db.ts';
import { loadClientTokenSigner, type ClientTokenSigner } from './client-token.ts';
import { loadRoomKeyPair, type RoomKeyPair } from './room-token.ts';

export class TokenKeys {
  private signer: Promise<ClientTokenSigner> | null = null;
  private pair: Promise<RoomKeyPair> | null = null;

  constructor(private readonly db: Db, private readonly config: Config) {}

  /** The client-token signer (loaded on first use; a failed load is tried again next time). */
  clientTokenSigner(): Promise<ClientTokenSigner> {
    return (this.signer ??= retried(loadClientTokenSigner(this.db, this.config), () => { this.signer = null; }));
  }

  /** The room-token key pair (loaded on first use; a failed load is tried again next time). */
  roomKeyPair(): Promise<RoomKeyPair> {
    return (this.pair ??= retried(loadRoomKeyPair(this.db, this.config), () => { this.pair = null; }));
  }
}

function retried<T>(p: Promise<T>, forget: () => void): Promise<T> {
  p.catch(forget);
  return p;
}
