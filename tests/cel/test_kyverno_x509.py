"""x509.decode: the map Kyverno builds from crypto/x509 (sdk x509/impl_test.go), decoded without crypto."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_x509 import x509_library
from kubectl_kyrec.golang.x509 import has_certificate, pem_decode

# the certificate from Kyverno's own test
KYVERNO_CERT = """-----BEGIN CERTIFICATE-----
MIIC7TCCAdWgAwIBAgIBADANBgkqhkiG9w0BAQsFADAYMRYwFAYDVQQDDA0qLmt5
dmVybm8uc3ZjMB4XDTIyMTAxMDExNDYzMloXDTIzMTAxMDEyNDYzMlowGDEWMBQG
A1UEAwwNKi5reXZlcm5vLnN2YzCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
ggEBAOKF+2P0Ufp855hpdsGD4lYkd6oU7HZAOWm1XskAMwrdsqWwTNNAinyHRoPQ
IbNbGDQ+r6Cggc2mlxHJ90PnC2weHj5otaD17Z+ARZpJZ4HMWkEfFt8sxwo9vuQJ
RWihqNwFheowjswoSB1DHnPufrZHfztkMoRx278ZfHaIMdlSTg50ektkNDoHA3OJ
sxxw54X3HR1iq6SZwN8xNT0TI6B6BbfAYWMNmKCiZ2iV6kW//XnTEqGd2WcmhuP0
SjwO4tCJbj9oV6+Bj/uhFr7J4foErMaodYDBtQs/ul2tcAwSBHfnC2KcLbiZTZsC
0Rs0WPJ4YwF/cOsD7Z/RmLs4FHsCAwEAAaNCMEAwDgYDVR0PAQH/BAQDAgKkMA8G
A1UdEwEB/wQFMAMBAf8wHQYDVR0OBBYEFJaK+3Wfnf7rVkYBzMCLSaV56NMqMA0G
CSqGSIb3DQEBCwUAA4IBAQDY7F6b+t9BX7098JyGk6zeT39MoLdSv+8IaKXn+m8G
yOKn3CZkruko57ycvPd4taC0gggtmUYynFhwPMQr+boNrrK9rat8Jw3yPPsBq/8D
/s6tvwxSNXBfPUI5OvNIB/hA5XpJpdHQaCkYm+FWkcJsolkkbSOfVjUjImW26JHB
nnPPtR4Y7dx0SVoPS19IC0T5RmdvgqlXj4XbhTnX3QOujVHn8u+wQ8po7EngHDQs
+onfkp8ipe0QpEJL1ZdW2LhyDXGKrZ2y8UPZ9wYNzxHWaj1Thu4B9YFdsPUwWqSx
n9e+FygpoktlD8YgT7jwgiVKX7Koz++zyvMIdhvRrtgS
-----END CERTIFICATE-----"""
KYVERNO_N = ("28595925905962223424520947352207105451744616797088171943239289907331901888529856098458304611629660"
             "12057460750103990214236133398206579321326707485465852510079928015870784027947955096116921376352685"
             "72472986531417110039316426066620526749431914764886658423095833110973513319942674137767924626371927"
             "75240062778036062353517979538994974045127175206597906751521558536719043095219698535279694800624795"
             "67380935689845243851804102412662405188704493216450601957372598720420875067412967758495615661145424"
             "50049189437715714927576394324596889318555269418863548807270249123841402380276973486346099528505131"
             "22734230521040730560514233467")

# openssl req -x509 with SAN, EKU, AIA, CRL DP, policies, name constraints, pathlen 0 and a 10-byte serial;
# the expectations below come from `openssl x509 -text`
FULL_CERT = """
-----BEGIN CERTIFICATE-----
MIIEBTCCA26gAwIBAgIKEjRWeJCrze8SNDANBgkqhkiG9w0BAQsFADBRMQswCQYD
VQQGEwJERTEUMBIGA1UECgwLRXhhbXBsZSBPcmcxETAPBgNVBAsMCFBsYXRmb3Jt
MRkwFwYDVQQDDBB0ZXN0LmV4YW1wbGUuY29tMB4XDTI2MTEyOTA4MDAyMloXDTI2
MTIyOTA4MDAyMlowUTELMAkGA1UEBhMCREUxFDASBgNVBAoMC0V4YW1wbGUgT3Jn
MREwDwYDVQQLDAhQbGF0Zm9ybTEZMBcGA1UEAwwQdGVzdC5leGFtcGxlLmNvbTCB
nzANBgkqhkiG9w0BAQEFAAOBjQAwgYkCgYEAqKi3W09zKHTBB/qLsM3Jp27uFqw+
SfqSwJ3TueXfL1COAi43V6pMRktNe5wboxgCRauXMX4R9O65CJLpEo6bD0IJXLKb
T4HpXd2X/WPdM/Y6F4dajb0NGvWUxCsP9ynj3EUrAhxWINXDy6rjBwHQeqhu/+lR
pGHC/t8HSqYFdHcCAwEAAaOCAeIwggHeMGcGA1UdEQRgMF6CDWEuZXhhbXBsZS5j
b22CDWIuZXhhbXBsZS5jb22BD29wc0BleGFtcGxlLmNvbYcECgECA4cQIAENuAAA
AAAAAAAAAAAAAYYVaHR0cHM6Ly9leGFtcGxlLmNvbS94MCIGA1UdJQQbMBkGCCsG
AQUFBwMBBggrBgEFBQcDAgYDKgMEMF0GCCsGAQUFBwEBBFEwTzAjBggrBgEFBQcw
AYYXaHR0cDovL29jc3AuZXhhbXBsZS5jb20wKAYIKwYBBQUHMAKGHGh0dHA6Ly9j
YS5leGFtcGxlLmNvbS9jYS5jcnQwLQYDVR0fBCYwJDAioCCgHoYcaHR0cDovL2Ny
bC5leGFtcGxlLmNvbS9hLmNybDAcBgNVHSAEFTATMAYGBFUdIAAwCQYHKwYBBAFj
ATA/BgNVHR4BAf8ENTAzoBwwDoIMLmV4YW1wbGUuY29tMAqHCAoAAAD/AAAAoRMw
EYEPYmFkLmV4YW1wbGUuY29tMBIGA1UdEwEB/wQIMAYBAf8CAQAwDgYDVR0PAQH/
BAQDAgGGMB8GA1UdIwQYMBaAFGSBbohBOCBGSVJaZDAHBNsOB/3LMB0GA1UdDgQW
BBRkgW6IQTggRklSWmQwBwTbDgf9yzANBgkqhkiG9w0BAQsFAAOBgQCQM1kI9mRY
dVQXRi/RuTo7TqZFmFFLBKSzxuoVmdFeI88dOnB2pvbyDuLdVGAcBJNJNNErfyRD
EdP/pu+7UaxKi+EuUdx35WFx99KLmQ3+JUruAPTyTpgLcED+USr/hJgLYxdnHxWV
+zC79/SybvYWtQZ6R4+Y0EtWKKHiXpLBsw==
-----END CERTIFICATE-----
"""

CSR = """
-----BEGIN CERTIFICATE REQUEST-----
MIIBrDCCARUCAQAwKTEYMBYGA1UEAwwPY3NyLmV4YW1wbGUuY29tMQ0wCwYDVQQK
DARBY21lMIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCoqLdbT3ModMEH+ouw
zcmnbu4WrD5J+pLAndO55d8vUI4CLjdXqkxGS017nBujGAJFq5cxfhH07rkIkukS
jpsPQglcsptPgeld3Zf9Y90z9joXh1qNvQ0a9ZTEKw/3KePcRSsCHFYg1cPLquMH
AdB6qG7/6VGkYcL+3wdKpgV0dwIDAQABoEMwQQYJKoZIhvcNAQkOMTQwMjAgBgNV
HREEGTAXgg9jc3IuZXhhbXBsZS5jb22HBMCoAAEwDgYDVR0PAQH/BAQDAgeAMA0G
CSqGSIb3DQEBCwUAA4GBAH60BSN4eucDC9xfBd5SePkk0KD2HeoDMGf1mpLMfVMx
Cv3B32Z7tTH1N+IHPJbhd63bxEw7/3RtPh6hbpdrMsBMM/Q2BAacPJWJl93Uk1DR
ySG0jBnlN+p1Ubr+UoUDY0+dBSshkdUYznRTjSbZJ/9wbIHXLAKs2YPTQQpRPreW
-----END CERTIFICATE REQUEST-----
"""

EC_CERT = """
-----BEGIN CERTIFICATE-----
MIIBcDCCARWgAwIBAgIUVt/5dZrsPjITwbXN5sdYfU/iVSAwCgYIKoZIzj0EAwIw
DTELMAkGA1UEAwwCZWMwHhcNMjYxMTI5MDc1ODA1WhcNMjYxMTMwMDc1ODA1WjAN
MQswCQYDVQQDDAJlYzBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABFc+xNMYBd/L
l/19xaUHN7p6zA8ay08lIlMd3cq3ryy6wrCxreoPpCWaPd2viPeLXZuby4sXiFCn
1Xr3OuKlSESjUzBRMB0GA1UdDgQWBBTWRaXolfz/tPTUMvrU5F/i5MjZuzAfBgNV
HSMEGDAWgBTWRaXolfz/tPTUMvrU5F/i5MjZuzAPBgNVHRMBAf8EBTADAQH/MAoG
CCqGSM49BAMCA0kAMEYCIQCEme8xHTi+1i8Ct0H4p0BieFR9w9oJz4T2nGs3LbWF
6gIhAMT7RU4Rv16/K1rN12FgIqWO69L+RvSNCaeVSUoIkOOe
-----END CERTIFICATE-----
"""
FULL_MODULUS_HEX = ("A8A8B75B4F732874C107FA8BB0CDC9A76EEE16AC3E49FA92C09DD3B9E5DF2F508E022E3757AA4C464B4D7B9C1BA318"
                    "0245AB97317E11F4EEB90892E9128E9B0F42095CB29B4F81E95DDD97FD63DD33F63A17875A8DBD0D1AF594C42B0FF7"
                    "29E3DC452B021C5620D5C3CBAAE30701D07AA86EFFE951A461C2FEDF074AA6057477")


def decode(pem: str) -> Any:
    env = Environment([x509_library()], ["cert"])
    outcome = env.compile("x509.decode(cert)").evaluate(env.activation({"cert": pem}))
    return outcome.error if outcome.error is not None else outcome.value


def test_kyverno_certificate() -> None:
    result = decode(KYVERNO_CERT)
    assert result["IsCA"] is True
    assert result["BasicConstraintsValid"] is True
    assert result["KeyUsage"] == 37.0
    assert result["SerialNumber"] == 0.0
    assert result["PublicKeyAlgorithm"] == 1.0
    assert result["MaxPathLen"] == -1.0
    assert result["MaxPathLenZero"] is False
    assert result["NotBefore"] == "2022-10-10T11:46:32Z"
    assert result["NotAfter"] == "2023-10-10T12:46:32Z"
    assert result["Issuer"]["CommonName"] == "*.kyverno.svc"
    assert result["Issuer"]["SerialNumber"] == ""
    assert result["PublicKey"] == {"E": 65537.0, "N": KYVERNO_N}
    assert len(result["Extensions"]) == 3
    assert result["Extensions"][0]["Critical"] is True
    for raw in ("Raw", "RawIssuer", "RawSubject", "RawSubjectPublicKeyInfo", "RawTBSCertificate", "Signature"):
        assert isinstance(result[raw], str) and base64.b64decode(result[raw])


def test_kyverno_certificate_field_set_and_nulls() -> None:
    result = decode(KYVERNO_CERT)
    assert set(result) == {
        "Raw", "RawTBSCertificate", "RawSubjectPublicKeyInfo", "RawSubject", "RawIssuer", "Signature",
        "PublicKeyAlgorithm", "PublicKey", "SerialNumber", "Issuer", "NotBefore", "NotAfter", "KeyUsage",
        "Extensions", "ExtraExtensions", "ExtKeyUsage", "BasicConstraintsValid", "IsCA", "MaxPathLen",
        "MaxPathLenZero", "AuthorityKeyId", "OCSPServer", "IssuingCertificateURL", "DNSNames", "EmailAddresses",
        "IPAddresses", "PermittedDNSDomainsCritical", "PermittedDNSDomains", "ExcludedDNSDomains",
        "PermittedIPRanges", "ExcludedIPRanges", "PermittedEmailAddresses", "ExcludedEmailAddresses",
        "PermittedURIDomains", "ExcludedURIDomains", "CRLDistributionPoints", "PolicyIdentifiers"}
    # Go marshals nil slices as null
    assert result["DNSNames"] is None and result["ExtKeyUsage"] is None and result["ExtraExtensions"] is None
    assert result["Issuer"]["Names"] == [{"Type": [2.0, 5.0, 4.0, 3.0], "Value": "*.kyverno.svc"}]
    assert result["Issuer"]["Country"] is None


def test_certificate_with_every_extension_kyverno_reports() -> None:
    result = decode(FULL_CERT)
    assert result["NotBefore"] == "2026-11-29T08:00:22Z"
    assert result["NotAfter"] == "2026-12-29T08:00:22Z"
    assert result["SerialNumber"] == float(0x567890ABCDEF1234)  # big.Int.Int64() keeps the low 64 bits
    assert result["PublicKey"]["N"] == str(int(FULL_MODULUS_HEX, 16))
    assert result["Issuer"]["Country"] == ["DE"]
    assert result["Issuer"]["Organization"] == ["Example Org"]
    assert result["Issuer"]["OrganizationalUnit"] == ["Platform"]
    assert result["DNSNames"] == ["a.example.com", "b.example.com"]
    assert result["EmailAddresses"] == ["ops@example.com"]
    assert result["IPAddresses"] == ["10.1.2.3", "2001:db8::1"]
    assert result["ExtKeyUsage"] == [1.0, 2.0]  # the unknown 1.2.3.4 is not listed
    assert result["OCSPServer"] == ["http://ocsp.example.com"]
    assert result["IssuingCertificateURL"] == ["http://ca.example.com/ca.crt"]
    assert result["CRLDistributionPoints"] == ["http://crl.example.com/a.crl"]
    assert result["PolicyIdentifiers"] == [[2.0, 5.0, 29.0, 32.0, 0.0], [1.0, 3.0, 6.0, 1.0, 4.0, 1.0, 99.0, 1.0]]
    assert result["PermittedDNSDomainsCritical"] is True
    assert result["PermittedDNSDomains"] == [".example.com"]
    assert result["PermittedIPRanges"] == [{"IP": "10.0.0.0", "Mask": base64.b64encode(b"\xff\0\0\0").decode()}]
    assert result["ExcludedEmailAddresses"] == ["bad.example.com"]
    assert result["IsCA"] is True and result["MaxPathLen"] == 0.0 and result["MaxPathLenZero"] is True
    assert result["KeyUsage"] == 97.0  # digitalSignature | keyCertSign | cRLSign
    assert result["AuthorityKeyId"] == base64.b64encode(bytes.fromhex("64816E884138204649525A64300704DB0E07FDCB")
                                                        ).decode()


def test_certificate_request() -> None:
    result = decode(CSR)
    assert result["Subject"]["CommonName"] == "csr.example.com"
    assert result["Subject"]["Organization"] == ["Acme"]
    assert result["Version"] == 0.0
    assert result["SignatureAlgorithm"] == 4.0  # SHA256WithRSA
    assert result["DNSNames"] == ["csr.example.com"]
    assert result["IPAddresses"] == ["192.168.0.1"]
    assert [e["Id"] for e in result["Extensions"]] == [[2.0, 5.0, 29.0, 17.0], [2.0, 5.0, 29.0, 15.0]]
    assert result["PublicKey"]["N"] == str(int(FULL_MODULUS_HEX, 16))
    # the legacy Attributes field: the extensionRequest, a critical extension's value read as its BOOLEAN
    assert result["Attributes"][0]["Type"] == [1.0, 2.0, 840.0, 113549.0, 1.0, 9.0, 14.0]
    assert result["Attributes"][0]["Value"][0][1] == {"Type": [2.0, 5.0, 29.0, 15.0], "Value": True}


@pytest.mark.parametrize(("pem", "message"), [
    ("not a valid PEM", "failed to decode PEM block"),
    ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", "PEM block neither contains a CERTIFICATE or "
                                                                   "CERTIFICATE REQUEST"),
    ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", "x509: malformed certificate"),
])
def test_errors(pem: str, message: str) -> None:
    assert decode(pem) == message


def test_only_rsa_keys_are_accepted() -> None:
    assert decode(EC_CERT) == "certificate should use rsa algorithm"


def test_pem_decode_skips_text_around_blocks() -> None:
    block = pem_decode("junk before\n" + KYVERNO_CERT + "\ntrailing")
    assert block is not None and block[0] == "CERTIFICATE"


def test_has_certificate_looks_past_other_blocks() -> None:
    assert has_certificate(CSR + "\n" + KYVERNO_CERT)
    assert not has_certificate(CSR)
    assert not has_certificate("nothing")
