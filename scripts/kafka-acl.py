#!/usr/bin/python3
"""Grants ACLs on the secured test cluster of scripts/kafka.sh (start
--secure), as its admin, with kafka-python's admin client: the broker jars
kafka.sh fetches hold no ACL tool. Test tooling, not part of kretry; run it
through `scripts/kafka.sh acl`.

usage: kafka-acl.py BOOTSTRAP ADMIN.properties USER OP... -- RESOURCE...

OP: Read, Write, Describe, DescribeConfigs, AlterConfigs, Create, Delete,
Alter, IdempotentWrite, ClusterAction, All. RESOURCE: topic:NAME,
group:NAME, transactional-id:NAME (NAME ending in * grants on the prefix
before it), or cluster. Every OP is allowed to User:USER on every RESOURCE,
from any host. Exit 0 once the broker accepted them all.
"""
import re
import sys

from kafka.admin import (ACL, ACLOperation, ACLPermissionType,
                         ACLResourcePatternType, KafkaAdminClient,
                         ResourcePattern, ResourceType)

TYPES = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP,
         "transactional-id": ResourceType.TRANSACTIONAL_ID}


def client_args(path):
    """kafka-python's arguments for a librdkafka properties file of
    scripts/kafka.sh secure-props (SASL_SSL only: the admin's)."""
    props = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                props[k] = v
    return {"security_protocol": props["security.protocol"],
            "sasl_mechanism": props["sasl.mechanism"],
            "sasl_plain_username": props["sasl.username"],
            "sasl_plain_password": props["sasl.password"],
            "ssl_cafile": props["ssl.ca.location"]}


def operation(name):
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
    if snake not in ACLOperation.__members__ or snake in ("ANY", "UNKNOWN"):
        sys.exit("kafka-acl.py: unknown operation: %s" % name)
    return ACLOperation[snake]


def pattern(text):
    if text == "cluster":
        return ResourcePattern(ResourceType.CLUSTER, "kafka-cluster",
                               ACLResourcePatternType.LITERAL)
    kind, _, name = text.partition(":")
    if kind not in TYPES or not name or name == "*":
        sys.exit("kafka-acl.py: not a resource: %s" % text)
    if name.endswith("*"):
        return ResourcePattern(TYPES[kind], name[:-1],
                               ACLResourcePatternType.PREFIXED)
    return ResourcePattern(TYPES[kind], name, ACLResourcePatternType.LITERAL)


def main(argv):
    if len(argv) < 6 or "--" not in argv[4:]:
        sys.exit(__doc__)
    bootstrap, props, user = argv[1], argv[2], argv[3]
    cut = argv.index("--", 4)
    ops = [operation(o) for o in argv[4:cut]]
    resources = [pattern(r) for r in argv[cut + 1:]]
    if not ops or not resources:
        sys.exit(__doc__)
    acls = [ACL("User:" + user, "*", op, ACLPermissionType.ALLOW, r)
            for r in resources for op in ops]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap,
                             client_id="kretry-test-acl",
                             **client_args(props))
    try:
        result = admin.create_acls(acls)
    finally:
        admin.close()
    for acl, err in result["failed"]:
        print("kafka-acl.py: refused: %s: %s" % (acl, err), file=sys.stderr)
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
