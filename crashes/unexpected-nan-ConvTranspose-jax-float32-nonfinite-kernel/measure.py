import os, sys
os.environ["KERAS_BACKEND"]="jax"
import numpy as np, keras
from keras import layers
dt="float32"
for cls,ks,sp in ((layers.Conv1DTranspose,(2,),(1,)),(layers.Conv2DTranspose,(2,2),(1,1)),(layers.Conv3DTranspose,(2,2,1),(1,1,1))):
  for cin,cout in ((2,2),(3,3),(5,7),(8,8)):
    x=keras.Input(sp+(cin,),dtype=dt)
    l=cls(cout,ks,dtype=dt)
    m=keras.Model(x,l(x))
    k=np.zeros(ks+(cout,cin)); k[(0,)*len(ks)+(cout-1,cin-1)]=np.inf
    l.set_weights([k.astype(dt), np.full([cout],-3.0,dt)])
    inp=np.zeros((1,)+sp+(cin,),dt)
    e=keras.ops.convert_to_numpy(m(inp))[...,cout-1].ravel()
    print(cls.__name__,cin,cout,e, keras.ops.convert_to_numpy(m(inp))[...,0].ravel())
