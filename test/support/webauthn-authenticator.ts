// A software passkey authenticator for API tests: runs real WebAuthn ceremonies (ES256 keys,
// "none" attestation) against @simplewebauthn/server. It plays both browser and authenticator,
// so it builds clientDataJSON too; overrides let attack tests forge what a real client never would.
import { createHash, generateKeyPairSync, randomBytes, randomInt, sign, type KeyObject } from "node:crypto";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { isoCBOR } from "@simplewebauthn/server/helpers";

export interface SoftCredential {
  id: string; // base64url
  privateKey: KeyObject;
  publicKey: Uint8Array; // COSE EC2, the bytes the server stores
  rpId: string;
  userHandle: string; // base64url, options.user.id at registration
  signCount: number;
  backupEligible: boolean;
  backupState: boolean;
}

/** Ways to make a ceremony wrong on purpose. Unset fields behave like an honest authenticator. */
export interface CeremonyOverrides {
  rpId?: string; // RP ID hashed into authData
  challenge?: string; // base64url challenge put in clientDataJSON
  type?: string; // clientDataJSON type
  userVerified?: boolean; // false clears the UV flag
  signCount?: number; // counter written to authData (the stored counter is left alone)
  credentialId?: string; // create: the new credential's id; get: which stored credential to use
  userHandle?: string | null; // create: the handle to store; get: the handle to send (null omits it)
  crossOrigin?: boolean; // clientDataJSON crossOrigin: true is what a browser writes in a frame of another origin
  topOrigin?: string; // clientDataJSON topOrigin: the framing page's origin (Chrome sends it, Safari does not)
}
export interface RegistrationOverrides extends CeremonyOverrides {
  backupEligible?: boolean; // BE flag, kept on the credential (default false)
  backupState?: boolean; // BS flag, kept on the credential (default false)
}
export interface AssertionOverrides extends CeremonyOverrides {
  corruptSignature?: boolean; // flip the signature's last byte
}

type Cbor = Parameters<typeof isoCBOR.encode>[0];
const ES256 = -7;
const FLAG = { UP: 0x01, UV: 0x04, BE: 0x08, BS: 0x10, AT: 0x40 } as const;
const b64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64url");
const sha256 = (data: Uint8Array | string): Buffer => createHash("sha256").update(data).digest();
const hostOf = (origin: string): string => new URL(origin).hostname;

export class SoftAuthenticator {
  #credentials: SoftCredential[] = [];

  /** Copies of the stored credentials (mutating them does not affect this authenticator). */
  get credentials(): SoftCredential[] {
    return this.#credentials.map((c) => ({ ...c }));
  }

  /** Store a copy, e.g. another authenticator's credential, to present it somewhere else. */
  addCredential(credential: SoftCredential): void {
    this.#credentials.push({ ...credential });
  }

  createCredential(options: PublicKeyCredentialCreationOptionsJSON, origin: string, overrides: RegistrationOverrides = {}): RegistrationResponseJSON {
    if (!options.pubKeyCredParams.some((p) => p.alg === ES256)) throw new Error("SoftAuthenticator: options do not allow ES256 (-7)");
    const excluded = new Set((options.excludeCredentials ?? []).map((c) => c.id));
    if (this.#credentials.some((c) => excluded.has(c.id)))
      throw new Error("SoftAuthenticator: InvalidStateError, an excluded credential is on this authenticator");

    const rpId = options.rp.id ?? hostOf(origin);
    const { privateKey, publicKey: spki } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const jwk = spki.export({ format: "jwk" });
    const publicKey = isoCBOR.encode(
      new Map<number, Cbor>([
        [1, 2], // kty: EC2
        [3, ES256], // alg
        [-1, 1], // crv: P-256
        [-2, new Uint8Array(Buffer.from(jwk.x ?? "", "base64url"))],
        [-3, new Uint8Array(Buffer.from(jwk.y ?? "", "base64url"))],
      ]),
    );
    const credential: SoftCredential = {
      id: overrides.credentialId ?? randomBytes(randomInt(16, 33)).toString("base64url"),
      privateKey,
      publicKey,
      rpId,
      userHandle: overrides.userHandle ?? options.user.id,
      signCount: 0,
      backupEligible: overrides.backupEligible ?? false,
      backupState: overrides.backupState ?? false,
    };
    const rawId = Buffer.from(credential.id, "base64url");
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(rawId.length);
    const authData = Buffer.concat([
      this.#authDataHead(credential, overrides, overrides.signCount ?? 0, FLAG.AT),
      Buffer.alloc(16), // AAGUID: all zeros
      idLength,
      rawId,
      publicKey,
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, Cbor>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", new Uint8Array(authData)],
      ]),
    );
    this.#credentials.push(credential);
    return {
      id: credential.id,
      rawId: credential.id,
      type: "public-key",
      authenticatorAttachment: "platform",
      clientExtensionResults: { credProps: { rk: true } },
      response: {
        clientDataJSON: b64url(this.#clientData("webauthn.create", options.challenge, origin, overrides)),
        attestationObject: b64url(attestationObject),
        authenticatorData: b64url(authData),
        transports: ["internal"],
        publicKeyAlgorithm: ES256,
        publicKey: b64url(spki.export({ format: "der", type: "spki" })),
      },
    };
  }

  getAssertion(options: PublicKeyCredentialRequestOptionsJSON, origin: string, overrides: AssertionOverrides = {}): AuthenticationResponseJSON {
    const credential = this.#pick(options, origin, overrides.credentialId);
    const signCount = overrides.signCount ?? ++credential.signCount;
    const authData = this.#authDataHead(credential, overrides, signCount, 0);
    const clientData = this.#clientData("webauthn.get", options.challenge, origin, overrides);
    const signature = sign("sha256", Buffer.concat([authData, sha256(clientData)]), credential.privateKey);
    const last = signature.length - 1;
    if (overrides.corruptSignature) signature.writeUInt8(signature.readUInt8(last) ^ 0xff, last);
    const userHandle = overrides.userHandle === undefined ? credential.userHandle : overrides.userHandle;
    return {
      id: credential.id,
      rawId: credential.id,
      type: "public-key",
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(clientData),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        ...(userHandle === null ? {} : { userHandle }),
      },
    };
  }

  /** The named credential, else the one for this RP ID (and in allowCredentials, if given). */
  #pick(options: PublicKeyCredentialRequestOptionsJSON, origin: string, credentialId: string | undefined): SoftCredential {
    if (credentialId !== undefined) {
      const named = this.#credentials.find((c) => c.id === credentialId);
      if (!named) throw new Error(`SoftAuthenticator: no credential ${credentialId}`);
      return named;
    }
    const rpId = options.rpId ?? hostOf(origin);
    const allowed = new Set((options.allowCredentials ?? []).map((c) => c.id));
    const matches = this.#credentials.filter((c) => c.rpId === rpId && (allowed.size === 0 || allowed.has(c.id)));
    const [only, ...rest] = matches;
    if (!only) throw new Error(`SoftAuthenticator: NotAllowedError, no credential for ${rpId}`);
    if (rest.length > 0) throw new Error(`SoftAuthenticator: ${matches.length} credentials for ${rpId}; pass overrides.credentialId`);
    return only;
  }

  /** rpIdHash (32) || flags (1) || signCount (4, big-endian). */
  #authDataHead(credential: SoftCredential, overrides: CeremonyOverrides, signCount: number, extraFlags: number): Buffer {
    let flags = FLAG.UP | extraFlags;
    if (overrides.userVerified !== false) flags |= FLAG.UV;
    if (credential.backupEligible) flags |= FLAG.BE;
    if (credential.backupState) flags |= FLAG.BS;
    const tail = Buffer.alloc(5);
    tail.writeUInt8(flags, 0);
    tail.writeUInt32BE(signCount, 1);
    return Buffer.concat([sha256(overrides.rpId ?? credential.rpId), tail]);
  }

  #clientData(type: string, challenge: string, origin: string, overrides: CeremonyOverrides): Buffer {
    const data = {
      type: overrides.type ?? type,
      challenge: overrides.challenge ?? challenge,
      origin,
      crossOrigin: overrides.crossOrigin ?? false,
      ...(overrides.topOrigin === undefined ? {} : { topOrigin: overrides.topOrigin }),
    };
    return Buffer.from(JSON.stringify(data), "utf8");
  }
}
