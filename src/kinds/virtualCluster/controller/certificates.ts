/**
 * X.509 certificates as upstream's vc-manager issues them with Go's crypto/x509 (`util/pki/util.go`, client-go's
 * `cert.NewSelfSignedCACert`), assembled on @peculiar/asn1-x509 (the ASN.1 models @peculiar/x509 is built on) and
 * signed with node:crypto. @peculiar/x509's generator serializes every extension, parses it back twice, parses the
 * names and the finished certificate again; issuing seven certificates per cluster that way was most of an upgrade's
 * CPU. Here each structure is built once and serialized once.
 *
 * What Go writes for such templates, and so what this writes: subject RDNs in Go's order (O before CN); extensions in
 * Go's order (keyUsage critical, extKeyUsage, basicConstraints critical — CA only, since upstream's leaf templates
 * leave BasicConstraintsValid unset —, subjectKeyIdentifier — CA only —, authorityKeyIdentifier = the issuer's SKI
 * when it has one and is not the subject itself, subjectAltName); sha256WithRSAEncryption or ecdsa-with-SHA256.
 */
import { createHash, sign, type KeyObject } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import * as asn from '@peculiar/asn1-x509';

export type SignatureKind = 'ecdsa-p256' | 'rsa-2048';

/** What issuing needs of the root CA, read once per upgrade. */
export interface CertificateAuthority {
  subject: asn.Name;
  /** The CA's subjectKeyIdentifier, the issued certificates' AKI (Go adds no AKI when the issuer has none). */
  keyId: ArrayBuffer | undefined;
  /** The CA's notBefore: upstream's leaves start when their CA does. */
  notBefore: Date;
  key: KeyObject;
  signature: SignatureKind;
}

export interface CertificateRequest {
  /** Relative distinguished names, written in Go's order (O, then CN) whatever the order given. */
  subject: [keyof typeof NAME_OIDS, string][];
  /** DER SubjectPublicKeyInfo of the certificate's key. */
  publicKeySpki: Buffer;
  serialNumber: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** A CA certificate: basicConstraints CA:TRUE (critical) and a subjectKeyIdentifier, as Go writes for IsCA. */
  ca: boolean;
  /** asn.KeyUsageFlags bits. */
  keyUsage: number;
  /** Extended key usage OIDs (none: no extension). */
  extendedKeyUsage: string[];
  dns: string[];
  ips: string[];
}

const NAME_OIDS = { CN: '2.5.4.3', O: '2.5.4.10' } as const;
/** Go's pkix.Name.ToRDNSequence order. */
const NAME_ORDER: (keyof typeof NAME_OIDS)[] = ['O', 'CN'];

const SIGNATURE_ALGORITHMS: Record<SignatureKind, asn.AlgorithmIdentifier> = {
  'ecdsa-p256': new asn.AlgorithmIdentifier({ algorithm: '1.2.840.10045.4.3.2' }), // ecdsa-with-SHA256, no parameters
  'rsa-2048': new asn.AlgorithmIdentifier({ algorithm: '1.2.840.113549.1.1.11', parameters: null }), // sha256WithRSAEncryption
};

/** PrintableString where the value allows it, UTF8String otherwise (as Go, @peculiar/x509 and OpenSSL choose). */
function attributeValue(value: string): asn.AttributeValue {
  return /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(value) ? new asn.AttributeValue({ printableString: value }) : new asn.AttributeValue({ utf8String: value });
}

function name(rdns: CertificateRequest['subject']): asn.Name {
  const ordered = NAME_ORDER.flatMap((type) => rdns.filter(([t]) => t === type));
  return new asn.Name(
    ordered.map(([type, value]) => new asn.RelativeDistinguishedName([new asn.AttributeTypeAndValue({ type: NAME_OIDS[type], value: attributeValue(value) })])),
  );
}

function extension(extnID: string, critical: boolean, value: unknown): asn.Extension {
  return new asn.Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

/** SHA-1 of the public key bits (RFC 5280 §4.2.1.2 method 1), as Go computes a CA's subjectKeyIdentifier. */
function keyIdOf(spki: asn.SubjectPublicKeyInfo): ArrayBuffer {
  return toArrayBuffer(createHash('sha1').update(new Uint8Array(spki.subjectPublicKey)).digest());
}

/** Reads the CA's subject, key identifier and validity start from its certificate (DER). */
export function certificateAuthority(certificateDer: Buffer, key: KeyObject, signature: SignatureKind): CertificateAuthority {
  const cert = AsnConvert.parse(certificateDer, asn.Certificate);
  const ski = cert.tbsCertificate.extensions?.find((e) => e.extnID === asn.id_ce_subjectKeyIdentifier);
  const keyId = ski ? AsnConvert.parse(ski.extnValue.buffer, asn.SubjectKeyIdentifier).buffer : undefined;
  return { subject: cert.tbsCertificate.subject, keyId, notBefore: cert.tbsCertificate.validity.notBefore.getTime(), key, signature };
}

/**
 * The certificate as DER: signed by `ca`, or self-signed with `key` when `ca` is omitted (the root CA, as
 * client-go's NewSelfSignedCACert: no authorityKeyIdentifier, the CN as its one DNS name is the caller's choice).
 */
export function issueCertificate(
  ca: CertificateAuthority | undefined,
  request: CertificateRequest,
  selfSigned?: { key: KeyObject; signature: SignatureKind },
): Buffer {
  const subjectPublicKeyInfo = AsnConvert.parse(request.publicKeySpki, asn.SubjectPublicKeyInfo);
  const subject = name(request.subject);
  const extensions = [extension(asn.id_ce_keyUsage, true, new asn.KeyUsage(request.keyUsage))];
  if (request.extendedKeyUsage.length > 0) extensions.push(extension(asn.id_ce_extKeyUsage, false, new asn.ExtendedKeyUsage(request.extendedKeyUsage)));
  if (request.ca) {
    extensions.push(extension(asn.id_ce_basicConstraints, true, new asn.BasicConstraints({ cA: true })));
    extensions.push(extension(asn.id_ce_subjectKeyIdentifier, false, new asn.SubjectKeyIdentifier(keyIdOf(subjectPublicKeyInfo))));
  }
  if (ca?.keyId)
    extensions.push(extension(asn.id_ce_authorityKeyIdentifier, false, new asn.AuthorityKeyIdentifier({ keyIdentifier: new asn.KeyIdentifier(ca.keyId) })));
  const names = [...request.dns.map((dNSName) => new asn.GeneralName({ dNSName })), ...request.ips.map((iPAddress) => new asn.GeneralName({ iPAddress }))];
  if (names.length > 0) extensions.push(extension(asn.id_ce_subjectAltName, false, new asn.SubjectAlternativeName(names)));
  const signer = ca ?? selfSigned;
  if (!signer) throw new Error('issueCertificate needs an issuer or a self-signing key');
  const signatureAlgorithm = SIGNATURE_ALGORITHMS[signer.signature];
  const tbsCertificate = new asn.TBSCertificate({
    version: asn.Version.v3,
    serialNumber: toArrayBuffer(request.serialNumber),
    signature: signatureAlgorithm,
    issuer: ca ? ca.subject : subject,
    validity: new asn.Validity({ notBefore: request.notBefore, notAfter: request.notAfter }),
    subject,
    subjectPublicKeyInfo,
    extensions: new asn.Extensions(extensions),
  });
  const tbs = Buffer.from(AsnConvert.serialize(tbsCertificate));
  // ECDSA signatures come DER-encoded (Ecdsa-Sig-Value) and RSA ones as PKCS #1 v1.5 bytes: what signatureValue holds.
  const signatureValue = sign('sha256', tbs, signer.key);
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
