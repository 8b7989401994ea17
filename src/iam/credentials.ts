/**
 * Who may sign requests. The bootstrap pair from the config is the first source; the IAM index
 * (index.ts) is another CredentialStore, so verification code (src/auth/) never knows where a
 * key came from.
 */

export interface Principal {
  /** `$bootstrap` for the config pair; the user name for IAM users. */
  name: string;
  accessKeyId: string;
}

export interface Credential {
  secretAccessKey: string;
  principal: Principal;
}

export interface CredentialStore {
  /** null when the access key is unknown (InvalidAccessKeyId). */
  lookup(accessKeyId: string): Credential | null;
}

/** The bootstrap credential pair (`access.access_key_id` / `access.secret_access_key`). */
export class BootstrapCredentials implements CredentialStore {
  readonly #credential: Credential | null;

  constructor(accessKeyId: string | undefined, secretAccessKey: string | undefined) {
    this.#credential = accessKeyId && secretAccessKey
      ? { secretAccessKey, principal: { name: "$bootstrap", accessKeyId } }
      : null;
  }

  lookup(accessKeyId: string): Credential | null {
    return this.#credential?.principal.accessKeyId === accessKeyId ? this.#credential : null;
  }
}

/** Asks each store in turn; the first that knows the key answers. */
export class ChainedCredentials implements CredentialStore {
  readonly #stores: CredentialStore[];
  constructor(stores: CredentialStore[]) {
    this.#stores = stores;
  }
  lookup(accessKeyId: string): Credential | null {
    for (const store of this.#stores) {
      const found = store.lookup(accessKeyId);
      if (found) return found;
    }
    return null;
  }
}
