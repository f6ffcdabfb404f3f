kretry_add_suite(test_parse)
kretry_add_suite(test_conf)
