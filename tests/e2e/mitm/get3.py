#!/usr/bin/env python3
"""get3.py URL...: GETs each URL in turn with urllib (the proxy from https_proxy, the CA from
SSL_CERT_FILE), printing "STATUS BODY" per line."""
import sys
import urllib.error
import urllib.request

for url in sys.argv[1:]:
    req = urllib.request.Request(url, headers={"Authorization": "token s3cret"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(r.status, r.read().decode().replace("\n", " "))
    except urllib.error.HTTPError as e:
        print(e.code, e.read().decode().replace("\n", " "))
    except Exception as e:  # a failed handshake, a refused connection
        print("ERROR", e)
    sys.stdout.flush()
