# bench/fleet: CPython busy in Python code (the Python walk names these frames).
import json


def inner(n):
    s = 0
    for i in range(n):
        s += (i * 31) ^ (s >> 3)
    return s


def outer():
    d = {}
    for k in range(200):
        d[k] = inner(2000)
    return json.dumps(d)


while True:
    outer()
