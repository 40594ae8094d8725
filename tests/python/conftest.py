pytest_plugins = ["testkeeper_pytest"]
