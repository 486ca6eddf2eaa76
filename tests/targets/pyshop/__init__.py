# pyshop: the package of tests/targets/py_modules.py, two modules each with a
# class named Entry.
