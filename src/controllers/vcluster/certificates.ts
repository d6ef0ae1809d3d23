/**
 * X.509 leaf and intermediate certificates issued by a cluster's root CA, assembled on @peculiar/asn1-x509 (the ASN.1
 * models @peculiar/x509 is built on) and signed with node:crypto. @peculiar/x509's generator serializes every
 * extension, parses it back twice, parses the names and the finished certificate again; issuing six certificates per
 * cluster that way was most of an upgrade's CPU. Here each structure is built once and serialized once.
 */
import { createHash, sign, type KeyObject } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import * as asn from '@peculiar/asn1-x509';

export type SignatureKind = 'ecdsa-p256' | 'rsa-2048';

/** What issuing needs of the root CA, read once per upgrade. */
export interface CertificateAuthority {
  subject: asn.Name;
  /** SHA-1 of the CA's public key bits (RFC 5280 §4.2.1.2 method 1), for the issued certificates' AKI. */
  keyId: ArrayBuffer;
  key: KeyObject;
  signature: SignatureKind;
}

export interface CertificateRequest {
  /** Relative distinguished names in order, e.g. [['CN', 'admin'], ['O', 'system:masters']]. */
  subject: [keyof typeof NAME_OIDS, string][];
  /** DER SubjectPublicKeyInfo of the certificate's key. */
  publicKeySpki: Buffer;
  serialNumber: Buffer;
  notBefore: Date;
  notAfter: Date;
  ca: boolean;
  /** asn.KeyUsageFlags bits. */
  keyUsage: number;
  /** Extended key usage OIDs (none for a CA). */
  extendedKeyUsage: string[];
  dns: string[];
  ips: string[];
}

const NAME_OIDS = { CN: '2.5.4.3', O: '2.5.4.10' } as const;

const SIGNATURE_ALGORITHMS: Record<SignatureKind, asn.AlgorithmIdentifier> = {
  'ecdsa-p256': new asn.AlgorithmIdentifier({ algorithm: '1.2.840.10045.4.3.2' }), // ecdsa-with-SHA256, no parameters
  'rsa-2048': new asn.AlgorithmIdentifier({ algorithm: '1.2.840.113549.1.1.11', parameters: null }), // sha256WithRSAEncryption
};

/** PrintableString where the value allows it, UTF8String otherwise (as @peculiar/x509 and OpenSSL choose). */
function attributeValue(value: string): asn.AttributeValue {
  return /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(value) ? new asn.AttributeValue({ printableString: value }) : new asn.AttributeValue({ utf8String: value });
}

function name(rdns: CertificateRequest['subject']): asn.Name {
  return new asn.Name(rdns.map(([type, value]) => new asn.RelativeDistinguishedName([new asn.AttributeTypeAndValue({ type: NAME_OIDS[type], value: attributeValue(value) })])));
}

function extension(extnID: string, critical: boolean, value: unknown): asn.Extension {
  return new asn.Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

/** Reads the CA's subject and key identifier from its certificate (DER). */
export function certificateAuthority(certificateDer: Buffer, key: KeyObject, signature: SignatureKind): CertificateAuthority {
  const cert = AsnConvert.parse(certificateDer, asn.Certificate);
  const publicKeyBits = cert.tbsCertificate.subjectPublicKeyInfo.subjectPublicKey;
  const keyId = createHash('sha1').update(new Uint8Array(publicKeyBits)).digest();
  return { subject: cert.tbsCertificate.subject, keyId: toArrayBuffer(keyId), key, signature };
}

/** The certificate, signed by `ca`, as DER. */
export function issueCertificate(ca: CertificateAuthority, request: CertificateRequest): Buffer {
  const extensions = [
    extension(asn.id_ce_basicConstraints, true, new asn.BasicConstraints({ cA: request.ca })),
    extension(asn.id_ce_keyUsage, true, new asn.KeyUsage(request.keyUsage)),
    extension(asn.id_ce_authorityKeyIdentifier, false, new asn.AuthorityKeyIdentifier({ keyIdentifier: new asn.KeyIdentifier(ca.keyId) })),
  ];
  if (request.extendedKeyUsage.length > 0) extensions.push(extension(asn.id_ce_extKeyUsage, false, new asn.ExtendedKeyUsage(request.extendedKeyUsage)));
  const names = [...request.dns.map((dNSName) => new asn.GeneralName({ dNSName })), ...request.ips.map((iPAddress) => new asn.GeneralName({ iPAddress }))];
  if (names.length > 0) extensions.push(extension(asn.id_ce_subjectAltName, false, new asn.SubjectAlternativeName(names)));
  const signatureAlgorithm = SIGNATURE_ALGORITHMS[ca.signature];
  const tbsCertificate = new asn.TBSCertificate({
    version: asn.Version.v3,
    serialNumber: toArrayBuffer(request.serialNumber),
    signature: signatureAlgorithm,
    issuer: ca.subject,
    validity: new asn.Validity({ notBefore: request.notBefore, notAfter: request.notAfter }),
    subject: name(request.subject),
    subjectPublicKeyInfo: AsnConvert.parse(request.publicKeySpki, asn.SubjectPublicKeyInfo),
    extensions: new asn.Extensions(extensions),
  });
  const tbs = Buffer.from(AsnConvert.serialize(tbsCertificate));
  // ECDSA signatures come DER-encoded (Ecdsa-Sig-Value) and RSA ones as PKCS #1 v1.5 bytes: what signatureValue holds.
  const signatureValue = sign('sha256', tbs, ca.key);
  const certificate = new asn.Certificate({ tbsCertificate, signatureAlgorithm, signatureValue: toArrayBuffer(signatureValue) });
  return Buffer.from(AsnConvert.serialize(certificate));
}

/** PEM of a DER certificate. */
export function certificatePem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

function toArrayBuffer(buffer: Buffer): ArrayBuffer {
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
}
