#!/bin/sh
# conv_shapes.sh — `make bench`: every distinct convolution of the full-size
# RT-DETR alone, parity against ONNX Runtime by CPU time (steady on a busy
# machine); the work is in conv_shapes.py beside this file.
exec /usr/bin/python3 "$(dirname "$0")/conv_shapes.py" "$@"
