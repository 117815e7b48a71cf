# exec: files of this part of the product
