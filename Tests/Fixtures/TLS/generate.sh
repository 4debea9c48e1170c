#!/usr/bin/env bash
# Regenerates the TLS test certificates in this folder (committed, so the tests need no openssl CLI).
# Every certificate is for tests on loopback only; the private keys are public on purpose.
#
#   ca.pem / ca-key.pem                 a test CA (valid 2000-2999)
#   server.pem / server-key.pem         localhost, 127.0.0.1 and ::1, signed by the CA (valid 2000-2999)
#   server2.pem / server2-key.pem       the same names with another key (certificate rotation tests)
#   expired.pem / expired-key.pem       localhost and 127.0.0.1, signed by the CA, valid 2000-2001 only
#   notyet.pem / notyet-key.pem         localhost and 127.0.0.1, signed by the CA, valid from 2990 on
#   wronghost.pem / wronghost-key.pem   example.com only, signed by the CA
#   selfsigned.pem / selfsigned-key.pem localhost and 127.0.0.1, signed by itself
#
# Uses `openssl ca` (OpenSSL 3.0 has no -not_before for `x509 -req`) with a throwaway database.
set -euo pipefail
cd "$(dirname "$0")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

cat >"$work/ca.cnf" <<CNF
[ ca ]
default_ca = test_ca
[ test_ca ]
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[ any ]
commonName = supplied
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = Contrail Test CA
[ ca_ext ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ leaf_ext ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
CNF
: >"$work/index.txt"
echo 1000 >"$work/serial"

key ca-key.pem
# The CA itself: valid from 2000 so that the old "expired" certificate is inside its validity.
openssl req -new -config "$work/ca.cnf" -key ca-key.pem -out "$work/ca.csr"
openssl ca -config "$work/ca.cnf" -batch -selfsign -keyfile ca-key.pem -in "$work/ca.csr" -extensions ca_ext \
    -startdate 20000101000000Z -enddate 29991231000000Z -out ca.pem -notext 2>/dev/null

# leaf NAME CN SAN START END [self]
leaf() {
    local name="$1" cn="$2" san="$3" start="$4" end="$5"
    key "$name-key.pem"
    openssl req -new -key "$name-key.pem" -subj "/CN=$cn" -addext "subjectAltName=$san" -out "$work/$name.csr"
    if [ "${6:-}" = self ]; then
        openssl ca -config "$work/ca.cnf" -batch -selfsign -keyfile "$name-key.pem" -in "$work/$name.csr" \
            -extensions leaf_ext -startdate "$start" -enddate "$end" -out "$name.pem" -notext 2>/dev/null
    else
        openssl ca -config "$work/ca.cnf" -batch -cert ca.pem -keyfile ca-key.pem -in "$work/$name.csr" \
            -extensions leaf_ext -startdate "$start" -enddate "$end" -out "$name.pem" -notext 2>/dev/null
    fi
}

names="DNS:localhost,IP:127.0.0.1,IP:::1"
leaf server localhost "$names" 20000101000000Z 29991231000000Z
leaf server2 localhost "$names" 20000101000000Z 29991231000000Z
leaf expired localhost "$names" 20000101000000Z 20010101000000Z
leaf notyet localhost "$names" 29900101000000Z 29991231000000Z
leaf wronghost example.com "DNS:example.com" 20000101000000Z 29991231000000Z
leaf selfsigned localhost "$names" 20000101000000Z 29991231000000Z self

# The public-key pins of the two server keys (base64 SHA-256 of the SubjectPublicKeyInfo).
for name in server server2; do
    openssl pkey -in "$name-key.pem" -pubout -outform der | openssl dgst -sha256 -binary | base64 >"$name.pin"
done
echo "certificates written to $(pwd)"
