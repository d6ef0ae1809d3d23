import type { Logger } from '../log.js';
import type { TokenService } from './TokenService.js';
import type { TokenStore } from './TokenStore.js';

/** What holds connections opened with a token: closed when the token is revoked. */
export interface TokenHolders {
  closeToken(tokenId: string): void;
  openTokens(): string[];
}

/**
 * Revocations end what a token opened: at once for those made here, and for those made on other replicas (PostgreSQL)
 * when the store announces them; a wake-up without a token id means some may have been missed, so every open one is
 * checked again. While announcements cannot reach this replica no cached token is trusted (auth/TokenCache.ts).
 */
export async function followRevocations(tokens: TokenService, store: TokenStore, holders: TokenHolders, logger: Logger): Promise<{ stop(): Promise<void> }> {
  tokens.onRevoked((tokenId) => holders.closeToken(tokenId));
  return store.watchRevocations(
    (tokenId) =>
      tokenId
        ? tokens.revokedElsewhere(tokenId)
        : void tokens.recheck(holders.openTokens()).catch((error: unknown) => logger.warn({ err: error }, 'cannot recheck the tokens of open subscriptions')),
    (error) => logger.warn({ err: error }, 'the token revocation connection failed; reconnecting'),
    { lost: () => tokens.announcementsLost(), back: () => tokens.announcementsBack() },
  );
}
